#!/usr/bin/env python3
"""Train Kiln's bundled demo model: a small CNN on scikit-learn's handwritten
digits (8x8 grey images, 10 classes), exported to ONNX.

Run with Debian's interpreter: /usr/bin/python3 models/digits/train.py
It writes, beside this file:
  digits.onnx        the trained model (input "image": [N, 1, 8, 8] float32)
  heldout.npz        held-out images ("image", [N, 1, 8, 8]), "label" and
                     PyTorch's "logits"
  heldout_0.npy      the first held-out image, [1, 1, 8, 8] (for kiln run)
  sample16.npz       the first 16 held-out images ("image") for the demo,
  sample16_labels.txt  and their labels
  reference.txt      the PyTorch accuracy on the held-out set
Everything is seeded, so the files are reproducible on one machine.
"""
import os

import numpy as np
import torch
from sklearn.datasets import load_digits

HERE = os.path.dirname(os.path.abspath(__file__))


class DigitsNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 16, 3, padding=1)
        self.bn1 = torch.nn.BatchNorm2d(16)
        self.conv2 = torch.nn.Conv2d(16, 32, 3, padding=1)
        self.bn2 = torch.nn.BatchNorm2d(32)
        self.pool = torch.nn.MaxPool2d(2)
        self.fc1 = torch.nn.Linear(32 * 2 * 2, 64)
        self.fc2 = torch.nn.Linear(64, 10)

    def forward(self, x):
        x = self.pool(torch.relu(self.bn1(self.conv1(x))))
        x = self.pool(torch.relu(self.bn2(self.conv2(x))))
        x = torch.flatten(x, 1)
        x = torch.relu(self.fc1(x))
        return self.fc2(x)


def main():
    torch.manual_seed(0)
    rng = np.random.RandomState(0)
    d = load_digits()
    x = (d.images.astype(np.float32) / 16.0)[:, None, :, :]
    y = d.target.astype(np.int64)
    order = rng.permutation(len(x))
    x, y = x[order], y[order]
    ntest = 297
    xtr, ytr, xte, yte = x[:-ntest], y[:-ntest], x[-ntest:], y[-ntest:]
    net = DigitsNet()
    opt = torch.optim.Adam(net.parameters(), lr=3e-3)
    xt, yt = torch.from_numpy(xtr), torch.from_numpy(ytr)
    for epoch in range(30):
        net.train()
        perm = torch.randperm(len(xt))
        for i in range(0, len(xt), 64):
            idx = perm[i:i + 64]
            opt.zero_grad()
            loss = torch.nn.functional.cross_entropy(net(xt[idx]), yt[idx])
            loss.backward()
            opt.step()
    net.eval()
    with torch.no_grad():
        logits = net(torch.from_numpy(xte)).numpy()
    pred = logits.argmax(1)
    acc = float((pred == yte).mean())
    print(f"held-out accuracy (PyTorch): {acc:.4f} on {ntest} images")
    torch.onnx.export(net, torch.from_numpy(xte[:1]), os.path.join(HERE, "digits.onnx"),
                      input_names=["image"], output_names=["logits"], opset_version=13,
                      dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"}})
    np.savez(os.path.join(HERE, "heldout.npz"), image=xte, label=yte, logits=logits)
    np.save(os.path.join(HERE, "heldout_0.npy"), xte[:1])
    np.savez(os.path.join(HERE, "sample16.npz"), image=xte[:16])
    with open(os.path.join(HERE, "sample16_labels.txt"), "w") as f:
        f.write(" ".join(str(int(v)) for v in yte[:16]) + "\n")
    with open(os.path.join(HERE, "reference.txt"), "w") as f:
        f.write(f"pytorch_accuracy {acc:.6f}\npytorch_correct {int((pred == yte).sum())}\nheldout_images {ntest}\n")


if __name__ == "__main__":
    main()
