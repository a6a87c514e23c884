/*
 * bench/conv2d.c - GFLOP/s of conv2d_NCHWc.x86 with its fallback config on
 * every distinct conv2d layer of ResNet-50 and VGG-16 at batch 1, on one
 * thread and on two, beside the FMA peak of one core and of two threads
 * running at once, measured by the same program (bench/matmul.c's method;
 * %2peak is against the two-thread figure, not twice the one-core one)
 * and each layer's fraction of them; for
 * the 3x3 stride-1 layers also conv2d_NCHWc_winograd.x86 with its
 * fallback config, in effective GFLOP/s (the direct convolution's FLOPs
 * over the Winograd kernel's time) and its speed-up over the direct one.
 *
 * Each layer is built once (the module's parallel loop runs on the pool's
 * threads, so the same module serves both columns), checked against a
 * direct convolution at a few hundred sampled outputs (the Winograd
 * kernel: against the direct kernel's whole output, relative L2 error),
 * then timed.  Without Winograd a column is the fastest of several runs
 * after a warm-up (the peak is also a best of runs).  With it, the direct
 * and Winograd runs alternate and each column is the median of its runs:
 * the machine may be shared and its speed drifts, so both kernels see the
 * same conditions.  A busy second core shows as a 2-thread column no
 * faster than the 1-thread one.
 *
 *   bench_conv2d [--layer SUBSTR] [--keep DIR] [--reps N] [--cfg JSON]
 *                [--wcfg JSON] [--epilogue] [--silu] [--residual] [--no-winograd]
 *                [--batch N [--vs JSON | --winograd]]
 *                [--depthwise | --grouped | --group-pad | --group-pair | --group-pack | --bf16] [--cold]
 * --layer runs the layers whose name contains SUBSTR; --keep keeps the
 * generated C sources in DIR; --cfg replaces the direct template's
 * fallback config by an entity list (e.g. '[["tile_ic","sp",[-1,16]],
 * ...]'), --wcfg the Winograd one's; --epilogue fuses a per-channel bias
 * add and a relu into each layer (the GFLOP/s still count the convolution
 * only), --silu a bias add and SiLU (x * sigmoid(x), EfficientNet's
 * epilogue), --residual a bias add, the add of a residual tensor of the
 * output's shape and layout, and a relu (a ResNet bottleneck's last 1x1;
 * no Winograd columns); --no-winograd leaves the Winograd columns out.  --batch N (N > 1)
 * times each layer at batch N instead of Winograd: the fallback config
 * against the same config without batch blocking (tile_n = 1), their runs
 * alternating, medians, the two outputs compared (relative L2 error);
 * with --vs JSON against that config instead (a candidate fallback rule,
 * one --layer at a time), and with --winograd the 3x3 stride-1 layers'
 * direct fallback against the Winograd fallback (--wcfg: that config) at
 * batch N, as at batch 1.
 * The "mobile." layers are the 1x1s of MobileNet-V2, MnasNet and
 * EfficientNet-B0 whose 24 or 40 output channels get 8-lane blocks, each
 * beside the same layer with the channels padded to 32 or 48 (what
 * alter_layout compiles), and the 16->96 and 16->48 1x1s and 3-channel
 * stems at 224 (3->32 and MobileNetV3's 3->16); the "odd." layers have output channels an odd number of
 * 16-lane chunks: RegNetX-1.6GF's 1x1s (912: 57, 1008: 63), SqueezeNet-
 * 1.1's 384->48 and GoogLeNet's 5x5 16->48 (3), and ShuffleNetV2's stem
 * (24: 3 chunks of 8);
 * the "narrow." layers are 3x3 stride-1 layers with 8 to 24 channels on
 * one side (where Winograd starts to pay: 16 channels from an 18x18
 * output, src/graph/backend/strategy.c);
 * "32(24)->80" reads a padded input of 32 channels of which 24 are real
 * (the reduction over those only; its GFLOP/s count the real FLOPs),
 * beside "32->80", the same reducing over all 32.
 * --cpu-time times runs by the process's CPU time per pool thread (see
 * run_clock), for a machine loaded by other work.
 * --cold evicts the layer's weights from the caches (clflush) before
 * every timed run, as in a model, where a layer's weights were last read
 * a whole inference ago (here they would stay in L2/L3 between runs);
 * with --residual it evicts the residual too, which in a model was last
 * read several layers earlier (at batch 8 tens of MB ago).
 * --depthwise times depthwise_conv2d_NCHWc.x86 instead, on the depthwise
 * layers of MobileNet-V2, MnasNet, EfficientNet-B0 and ConvNeXt-tiny, with
 * each layer's GB/s beside its GFLOP/s (the bytes it must move at least:
 * input, weights and output once): a depthwise layer does 2 x KH x KW
 * FLOPs per output element, so it is bound by memory and the load ports
 * long before the FMA units.  --grouped times group_conv2d_NCHWc.x86 on
 * the grouped layers of RegNetX-1.6GF, RegNetY-400MF and ResNeXt-50
 * 32x4d (each name ends with how often the layer occurs in its model);
 * --group-pad times, alternating, the fallback in the padded-group form
 * (knob group_pad: a group's 24 output channels computed as 32, zero
 * weights, in full vectors, the real ones kept) and the same config
 * without it, with the speed-up; layers without the knob print one
 * column.  --group-pair times the paired-group form (knob group_pair: two
 * groups of 24 in three 16-lane vectors) against group_pad, where the
 * fallback takes it.  --group-pack does the same for the lane-packed form (knob
 * group_pack: groups of 4 or 8 output channels side by side in 16-lane
 * vectors, each lane's input read by a permuted load).
 * --in-place (with --grouped) times, alternating, each layer's fallback
 * reading its input from a tensor in blocks of the vector width (channels
 * padded to a multiple of it, as the 1x1 conv in front writes them: the
 * conv's repack folded into its padded slab) against the same config on
 * its own block (the layout_transform that would precede it not timed),
 * the two outputs compared; layers whose block is already the vector
 * width print one column.
 * --bf16 times conv2d_NCHWc_bf16.x86 (`--precision bf16`, docs/bf16.md)
 * against conv2d_NCHWc.x86 on every layer with an even channel count: the
 * float32 kernel with its fallback config (or --cfg's), and the bfloat16
 * kernel with that config made a bfloat16 one (topi_x86_conv_bf16_from_
 * float32: the config a bfloat16 layer without a record of its own takes)
 * in both forms of its bf16_dot knob, "fma" and "vdpbf16ps"; the three
 * alternate, medians; beside them the VDPBF16PS peak and each
 * form's relative L2 error against the float32 output.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "autotune/autotune.h"
#include "bench_util.h"
#include "codegen/codegen.h"
#include "peak_util.h"
#include "topi/topi.h"

#include <stdint.h>

typedef struct Layer {
  const char *name;
  int64_t c, h, w, oc, k;
  int stride, pad;
  int64_t groups; /* 0: 1 */
  int64_t real;   /* 0: all c; else the real input channels of a padded input (alter_layout's) */
} Layer;

static int64_t groups_of(const Layer *L) { return L->groups > 1 ? L->groups : 1; }

/* The distinct conv2d layers (as in TopHub's resnet50v1 and vgg16 logs). */
static const Layer layers[] = {
    {"resnet50.conv1 7x7/2", 3, 224, 224, 64, 7, 2, 3},
    {"resnet50.1x1 64->64 @56", 64, 56, 56, 64, 1, 1, 0},
    {"resnet50.3x3 64->64 @56", 64, 56, 56, 64, 3, 1, 1},
    {"resnet50.1x1 64->256 @56", 64, 56, 56, 256, 1, 1, 0},
    {"resnet50.1x1 256->64 @56", 256, 56, 56, 64, 1, 1, 0},
    {"resnet50.1x1 256->128 @56", 256, 56, 56, 128, 1, 1, 0},
    {"resnet50.3x3/2 128->128 @56", 128, 56, 56, 128, 3, 2, 1},
    {"resnet50.1x1/2 256->512 @56", 256, 56, 56, 512, 1, 2, 0},
    {"resnet50.1x1 128->512 @28", 128, 28, 28, 512, 1, 1, 0},
    {"resnet50.1x1 512->128 @28", 512, 28, 28, 128, 1, 1, 0},
    {"resnet50.3x3 128->128 @28", 128, 28, 28, 128, 3, 1, 1},
    {"resnet50.1x1 512->256 @28", 512, 28, 28, 256, 1, 1, 0},
    {"resnet50.3x3/2 256->256 @28", 256, 28, 28, 256, 3, 2, 1},
    {"resnet50.1x1/2 512->1024 @28", 512, 28, 28, 1024, 1, 2, 0},
    {"resnet50.1x1 256->1024 @14", 256, 14, 14, 1024, 1, 1, 0},
    {"resnet50.1x1 1024->256 @14", 1024, 14, 14, 256, 1, 1, 0},
    {"resnet50.3x3 256->256 @14", 256, 14, 14, 256, 3, 1, 1},
    {"resnet50.1x1 1024->512 @14", 1024, 14, 14, 512, 1, 1, 0},
    {"resnet50.3x3/2 512->512 @14", 512, 14, 14, 512, 3, 2, 1},
    {"resnet50.1x1/2 1024->2048 @14", 1024, 14, 14, 2048, 1, 2, 0},
    {"resnet50.1x1 512->2048 @7", 512, 7, 7, 2048, 1, 1, 0},
    {"resnet50.1x1 2048->512 @7", 2048, 7, 7, 512, 1, 1, 0},
    {"resnet50.3x3 512->512 @7", 512, 7, 7, 512, 3, 1, 1},
    {"inception_v3.3x3 32->32 @149", 32, 149, 149, 32, 3, 1, 0},
    {"inception_v3.3x3 32->64 @147", 32, 147, 147, 64, 3, 1, 1},
    {"inception_v3.1x1 64->80 @73", 64, 73, 73, 80, 1, 1, 0},
    {"inception_v3.3x3 80->192 @73", 80, 73, 73, 192, 3, 1, 0},
    {"inception_v3.1x1 192->64 @35", 192, 35, 35, 64, 1, 1, 0},
    {"inception_v3.1x1 768->192 @17", 768, 17, 17, 192, 1, 1, 0},
    {"inception_v3.3x3/2 288->384 @35", 288, 35, 35, 384, 3, 2, 0},
    {"inception_v3.3x3 64->96 @35", 64, 35, 35, 96, 3, 1, 1},
    {"inception_v3.3x3 96->96 @35", 96, 35, 35, 96, 3, 1, 1},
    {"densenet121.3x3 128->32 @56", 128, 56, 56, 32, 3, 1, 1},
    {"densenet121.3x3 128->32 @28", 128, 28, 28, 32, 3, 1, 1},
    {"densenet121.3x3 128->32 @14", 128, 14, 14, 32, 3, 1, 1},
    {"googlenet.3x3 32->64 @14", 32, 14, 14, 64, 3, 1, 1},
    {"odd.3x3 32->32 @56", 32, 56, 56, 32, 3, 1, 1},
    {"odd.3x3 32->32 @28", 32, 28, 28, 32, 3, 1, 1},
    {"odd.3x3 32->48 @56", 32, 56, 56, 48, 3, 1, 1},
    {"googlenet.3x3 96->128 @28", 96, 28, 28, 128, 3, 1, 1},
    {"mobile.1x1 80->24 @56", 80, 56, 56, 24, 1, 1, 0},
    {"mobile.1x1 80->32 @56", 80, 56, 56, 32, 1, 1, 0},
    {"mobile.1x1 144->24 @56", 144, 56, 56, 24, 1, 1, 0},
    {"mobile.1x1 144->32 @56", 144, 56, 56, 32, 1, 1, 0},
    {"mobile.1x1 24->144 @56", 24, 56, 56, 144, 1, 1, 0},
    {"mobile.1x1 32->144 @56", 32, 56, 56, 144, 1, 1, 0},
    {"mobile.1x1 240->40 @28", 240, 28, 28, 40, 1, 1, 0},
    {"mobile.1x1 240->48 @28", 240, 28, 28, 48, 1, 1, 0},
    {"mobile.1x1 40->240 @28", 40, 28, 28, 240, 1, 1, 0},
    {"mobile.1x1 48->240 @28", 48, 28, 28, 240, 1, 1, 0},
    {"mobile.1x1 16->96 @112", 16, 112, 112, 96, 1, 1, 0},
    {"mobile.1x1 32->80 @56", 32, 56, 56, 80, 1, 1, 0},
    {"mobile.1x1 32(24)->80 @56", 32, 56, 56, 80, 1, 1, 0, 0, 24},
    {"mobile.1x1 32(24)->144 @56", 32, 56, 56, 144, 1, 1, 0, 0, 24},
    {"mobile.1x1 80(72)->32 @56", 80, 56, 56, 32, 1, 1, 0, 0, 72},
    {"mobile.1x1 48->128 @28", 48, 28, 28, 128, 1, 1, 0},
    {"mobile.1x1 48(40)->128 @28", 48, 28, 28, 128, 1, 1, 0, 0, 40},
    {"mobile.1x1 48(40)->240 @28", 48, 28, 28, 240, 1, 1, 0, 0, 40},
    {"mobile.1x1 128->48 @28", 128, 28, 28, 48, 1, 1, 0},
    {"mobile.1x1 128(120)->48 @28", 128, 28, 28, 48, 1, 1, 0, 0, 120},
    {"mobile.1x1 16->48 @112", 16, 112, 112, 48, 1, 1, 0},
    {"mobile.1x1 32->16 @112", 32, 112, 112, 16, 1, 1, 0},
    {"odd.1x1 912->912 @7", 912, 7, 7, 912, 1, 1, 0},
    {"odd.1x1 1008->1008 @7", 1008, 7, 7, 1008, 1, 1, 0},
    {"odd.1x1 384->48 @13", 384, 13, 13, 48, 1, 1, 0},
    {"odd.1x1 512->1008 @13", 512, 13, 13, 1008, 1, 1, 0},
    {"squeezenet.1x1 32->128 @27", 32, 27, 27, 128, 1, 1, 0},
    {"squeezenet.3x3 16->64 @55", 16, 55, 55, 64, 3, 1, 1},
    {"narrow.3x3 16->16 @56", 16, 56, 56, 16, 3, 1, 1},
    {"narrow.3x3 16->32 @112", 16, 112, 112, 32, 3, 1, 1},
    {"narrow.3x3 16->64 @28", 16, 28, 28, 64, 3, 1, 1},
    {"narrow.3x3 16->64 @14", 16, 14, 14, 64, 3, 1, 1},
    {"narrow.3x3 16->64 @16", 16, 16, 16, 64, 3, 1, 1},
    {"narrow.3x3 16->64 @18", 16, 18, 18, 64, 3, 1, 1},
    {"narrow.3x3 16->64 @20", 16, 20, 20, 64, 3, 1, 1},
    {"narrow.3x3 32->16 @28", 32, 28, 28, 16, 3, 1, 1},
    {"narrow.3x3 64->16 @56", 64, 56, 56, 16, 3, 1, 1},
    {"narrow.3x3 16->128 @14", 16, 14, 14, 128, 3, 1, 1},
    {"narrow.3x3 16->16 @28", 16, 28, 28, 16, 3, 1, 1},
    {"narrow.3x3 24->48 @56", 24, 56, 56, 48, 3, 1, 1},
    {"narrow.3x3 8->32 @56", 8, 56, 56, 32, 3, 1, 1},
    {"squeezenet.1x1 256->32 @27", 256, 27, 27, 32, 1, 1, 0},
    {"squeezenet.1x1 16->64 @55", 16, 55, 55, 64, 1, 1, 0},
    {"squeezenet.1x1 128->16 @55", 128, 55, 55, 16, 1, 1, 0},
    {"squeezenet.1x1 64->16 @55", 64, 55, 55, 16, 1, 1, 0},
    {"odd.1x1 144->48 @28", 144, 28, 28, 48, 1, 1, 0},
    {"odd.1x1 48->48 @56", 48, 56, 56, 48, 1, 1, 0},
    {"odd.1x1 32->48 @112", 32, 112, 112, 48, 1, 1, 0},
    {"odd.1x1 96->48 @14", 96, 14, 14, 48, 1, 1, 0},
    {"odd.1x1 240->48 @14", 240, 14, 14, 48, 1, 1, 0},
    {"odd.1x1 48->240 @14", 48, 14, 14, 240, 1, 1, 0},
    {"odd.1x1 512->144 @14", 512, 14, 14, 144, 1, 1, 0},
    {"odd.1x1 416(408)->912 @14", 416, 14, 14, 912, 1, 1, 0, 0, 408},
    {"odd.1x1 240(232)->240 @14", 240, 14, 14, 240, 1, 1, 0, 0, 232},
    {"odd.5x5 16->48 @14", 16, 14, 14, 48, 5, 1, 2},
    {"odd.3x3/2 3->24 @224", 3, 224, 224, 24, 3, 2, 1},
    {"mobile.3x3/2 3->32 @224", 3, 224, 224, 32, 3, 2, 1},
    {"mobile.3x3/2 3->16 @224", 3, 224, 224, 16, 3, 2, 1},
    {"squeezenet.3x3/2 3->64 @224", 3, 224, 224, 64, 3, 2, 0},
    {"vgg16.3x3 3->64 @224", 3, 224, 224, 64, 3, 1, 1},
    {"vgg16.3x3 64->64 @224", 64, 224, 224, 64, 3, 1, 1},
    {"vgg16.3x3 64->128 @112", 64, 112, 112, 128, 3, 1, 1},
    {"vgg16.3x3 128->128 @112", 128, 112, 112, 128, 3, 1, 1},
    {"vgg16.3x3 128->256 @56", 128, 56, 56, 256, 3, 1, 1},
    {"vgg16.3x3 256->256 @56", 256, 56, 56, 256, 3, 1, 1},
    {"vgg16.3x3 256->512 @28", 256, 28, 28, 512, 3, 1, 1},
    {"vgg16.3x3 512->512 @28", 512, 28, 28, 512, 3, 1, 1},
    {"vgg16.3x3 512->512 @14", 512, 14, 14, 512, 3, 1, 1},
    /* the ungrouped 1x1 layers Wide-ResNet-50 and ResNeXt-50 share (twice
     * ResNet-50's bottleneck width) */
    {"wide.1x1 128->256 @56", 128, 56, 56, 256, 1, 1, 0},
    {"wide.1x1 256->512 @28", 256, 28, 28, 512, 1, 1, 0},
    {"wide.1x1 512->1024 @14", 512, 14, 14, 1024, 1, 1, 0},
    {"wide.1x1 1024->2048 @7", 1024, 7, 7, 2048, 1, 1, 0},
    {"wide.1x1 2048->1024 @7", 2048, 7, 7, 1024, 1, 1, 0},
    {"wide.1x1/2 512->1024 @28", 512, 28, 28, 1024, 1, 2, 0},
};

/* With --depthwise: the distinct depthwise layers of MobileNet-V2, MnasNet,
 * EfficientNet-B0 and ConvNeXt-tiny (c = oc: multiplier 1). */
static const Layer dw_layers[] = {
    {"mobilenet_v2.dw3x3 32 @112", 32, 112, 112, 32, 3, 1, 1},
    {"mobilenet_v2.dw3x3/2 96 @112", 96, 112, 112, 96, 3, 2, 1},
    {"mobilenet_v2.dw3x3 144 @56", 144, 56, 56, 144, 3, 1, 1},
    {"mobilenet_v2.dw3x3/2 144 @56", 144, 56, 56, 144, 3, 2, 1},
    {"mobilenet_v2.dw3x3 192 @28", 192, 28, 28, 192, 3, 1, 1},
    {"mobilenet_v2.dw3x3/2 192 @28", 192, 28, 28, 192, 3, 2, 1},
    {"mobilenet_v2.dw3x3 384 @14", 384, 14, 14, 384, 3, 1, 1},
    {"mobilenet_v2.dw3x3 576 @14", 576, 14, 14, 576, 3, 1, 1},
    {"mobilenet_v2.dw3x3/2 576 @14", 576, 14, 14, 576, 3, 2, 1},
    {"mobilenet_v2.dw3x3 960 @7", 960, 7, 7, 960, 3, 1, 1},
    {"mnasnet.dw3x3/2 48 @112", 48, 112, 112, 48, 3, 2, 1},
    {"mnasnet.dw3x3 72 @56", 72, 56, 56, 72, 3, 1, 1},
    {"mnasnet.dw5x5/2 72 @56", 72, 56, 56, 72, 5, 2, 2},
    {"mnasnet.dw5x5 120 @28", 120, 28, 28, 120, 5, 1, 2},
    {"mnasnet.dw5x5 480 @14", 480, 14, 14, 480, 5, 1, 2},
    {"mnasnet.dw5x5/2 576 @14", 576, 14, 14, 576, 5, 2, 2},
    {"mnasnet.dw5x5 1152 @7", 1152, 7, 7, 1152, 5, 1, 2},
    {"efficientnet.dw5x5/2 144 @56", 144, 56, 56, 144, 5, 2, 2},
    {"efficientnet.dw5x5 240 @28", 240, 28, 28, 240, 5, 1, 2},
    {"convnext.dw7x7 96 @56", 96, 56, 56, 96, 7, 1, 3},
    {"convnext.dw7x7 192 @28", 192, 28, 28, 192, 7, 1, 3},
    {"convnext.dw7x7 384 @14", 384, 14, 14, 384, 7, 1, 3},
    {"convnext.dw7x7 768 @7", 768, 7, 7, 768, 7, 1, 3},
};

/* With --grouped: the distinct grouped (not depthwise) layers of
 * RegNetX-1.6GF (24 channels a group), RegNetY-400MF (8) and
 * ResNeXt-50 32x4d (32 groups of 4 to 32 channels), with how often each
 * occurs in its model. */
static const Layer group_layers[] = {
    {"regnet_x.g3 72 /2 @112 x1", 72, 112, 112, 72, 3, 2, 1, 3},
    {"regnet_x.g3 72 @56 x1", 72, 56, 56, 72, 3, 1, 1, 3},
    {"regnet_x.g7 168 /2 @56 x1", 168, 56, 56, 168, 3, 2, 1, 7},
    {"regnet_x.g7 168 @28 x3", 168, 28, 28, 168, 3, 1, 1, 7},
    {"regnet_x.g17 408 /2 @28 x1", 408, 28, 28, 408, 3, 2, 1, 17},
    {"regnet_x.g17 408 @14 x9", 408, 14, 14, 408, 3, 1, 1, 17},
    {"regnet_x.g38 912 /2 @14 x1", 912, 14, 14, 912, 3, 2, 1, 38},
    {"regnet_x.g38 912 @7 x1", 912, 7, 7, 912, 3, 1, 1, 38},
    {"regnet_y.g6 48 /2 @112 x1", 48, 112, 112, 48, 3, 2, 1, 6},
    {"regnet_y.g13 104 /2 @56 x1", 104, 56, 56, 104, 3, 2, 1, 13},
    {"regnet_y.g13 104 @28 x2", 104, 28, 28, 104, 3, 1, 1, 13},
    {"regnet_y.g26 208 /2 @28 x1", 208, 28, 28, 208, 3, 2, 1, 26},
    {"regnet_y.g26 208 @14 x5", 208, 14, 14, 208, 3, 1, 1, 26},
    {"regnet_y.g55 440 /2 @14 x1", 440, 14, 14, 440, 3, 2, 1, 55},
    {"regnet_y.g55 440 @7 x5", 440, 7, 7, 440, 3, 1, 1, 55},
    /* RegNetY's 104 and 440 as the model compiles them: a whole group
     * added (alter_layout's plan_group_padding), packed */
    {"regnet_y.g14 112(104) /2 @56 x1", 112, 56, 56, 112, 3, 2, 1, 14},
    {"regnet_y.g14 112(104) @28 x2", 112, 28, 28, 112, 3, 1, 1, 14},
    {"regnet_y.g56 448(440) /2 @14 x1", 448, 14, 14, 448, 3, 2, 1, 56},
    {"regnet_y.g56 448(440) @7 x5", 448, 7, 7, 448, 3, 1, 1, 56},
    {"resnext.g32 128 @56 x3", 128, 56, 56, 128, 3, 1, 1, 32},
    {"resnext.g32 256 /2 @56 x1", 256, 56, 56, 256, 3, 2, 1, 32},
    {"resnext.g32 256 @28 x3", 256, 28, 28, 256, 3, 1, 1, 32},
    {"resnext.g32 512 /2 @28 x1", 512, 28, 28, 512, 3, 2, 1, 32},
    {"resnext.g32 512 @14 x5", 512, 14, 14, 512, 3, 1, 1, 32},
    {"resnext.g32 1024 /2 @14 x1", 1024, 14, 14, 1024, 3, 2, 1, 32},
    {"resnext.g32 1024 @7 x2", 1024, 7, 7, 1024, 3, 1, 1, 32},
};

static DLTensor *array_of(int ndim, const int64_t *shape, DType dt) {
  DLTensor *a = NULL;
  DLDevice cpu = {kDLCPU, 0};
  if (kiln_array_empty(ndim, shape, dt, cpu, &a)) return NULL;
  return a;
}

static DLTensor *array(int ndim, const int64_t *shape) { return array_of(ndim, shape, DT_F32); }

static int64_t numel(const DLTensor *a) {
  int64_t n = 1;
  for (int i = 0; i < a->ndim; i++) n *= a->shape[i];
  return n;
}

static unsigned rng = 1;
static float frand(void) {
  rng = rng * 1664525u + 1013904223u;
  return (float)((rng >> 8) % 2000) / 1000.0f - 1.0f;
}

/* The kernel being checked is group_pair's: two groups a pair of whole
 * chunks, row o channel o (group_pad's of 3 groups of 24 has the same
 * shape). */
static bool paired_kernel;

/* One output element of the convolution, computed directly from the
 * blocked arrays. */
static double direct(const Layer *L, const DLTensor *d, const DLTensor *k, int64_t n, int64_t oc, int64_t oh,
                     int64_t ow) {
  int64_t icb = d->shape[4], ocb = k->shape[5], H = L->h, W = L->w;
  const float *D = (const float *)d->data + n * L->c * H * W, *K = k->data;
  double s = 0;
  if (k->shape[1] == 1 && k->ndim == 6 && k->shape[4] == 1 && L->c == L->oc) { /* depthwise [OC/b, 1, KH, KW, 1, b] */
    for (int64_t y = 0; y < L->k; y++)
      for (int64_t x = 0; x < L->k; x++) {
        int64_t ih = oh * L->stride + y - L->pad, iw = ow * L->stride + x - L->pad;
        if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
        s += (double)D[(((oc / icb) * H + ih) * W + iw) * icb + oc % icb] *
             K[(((oc / ocb) * L->k + y) * L->k + x) * ocb + oc % ocb];
      }
    return s;
  }
  /* grouped: output channel oc reads its group's cpg input channels; the
   * kernel is [OC/ocb, cpg/icb, KH, KW, icb, ocb] */
  int64_t cpg = L->c / groups_of(L), kpg = L->oc / groups_of(L), c0 = oc / kpg * cpg;
  /* a padded-group kernel (group_pad) holds kpgp >= kpg channels a group;
   * the kernel's input block kib may be smaller than the data's (in place,
   * group_pack) */
  int64_t ko = oc, kpgp = k->shape[0] * ocb / groups_of(L), kib = k->shape[4];
  if (kpgp != kpg && !paired_kernel) ko = oc / kpg * kpgp + oc % kpg;
  for (int64_t c = c0; c < c0 + (L->real ? L->real : cpg); c++)
    for (int64_t y = 0; y < L->k; y++)
      for (int64_t x = 0; x < L->k; x++) {
        int64_t ih = oh * L->stride + y - L->pad, iw = ow * L->stride + x - L->pad;
        if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
        double dv = D[(((c / icb) * H + ih) * W + iw) * icb + c % icb];
        double kv = K[((((ko / ocb) * (cpg / kib) + (c - c0) / kib) * L->k + y) * L->k + x) * kib * ocb +
                      ((c - c0) % kib) * ocb + ko % ocb];
        s += dv * kv;
      }
  return s;
}

/* --cold: evict the weights (argument 1) from every cache level before
 * each timed run.  In a model a layer's weights were last read a whole
 * inference ago, so they come from memory; here they would stay in L2/L3
 * between runs. */
static bool cold;
static bool residual_epilogue; /* --residual: bias + residual add + relu (argument 3 the residual) */

/* --cpu-time: a run's time is the process's CPU time over the pool's
 * threads (per thread; with 2 threads their mean) instead of wall time,
 * so time slices the machine's other work takes do not count - under
 * load a batch-8 layer's run outlasts a time slice and its wall time
 * measures the load.  Read the 1-thread columns: with 2 threads a worker
 * that sleeps while it waits for the other counts no time, so that
 * column can exceed the peak. */
static bool cpu_time;
static int threads_now = 1;

static void set_threads(int n) {
  kiln_set_num_threads(n);
  threads_now = n;
}

static double run_clock(void) {
  if (!cpu_time) return kiln_now_seconds();
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ((double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec) / threads_now;
}

static double run_once(KilnFunction *f, KilnValue *args, int *codes, int nargs) {
  KilnValue ret;
  int rc;
  if (cold) bench_evict((const DLTensor *)args[1].v_handle);
  if (cold && residual_epilogue) bench_evict((const DLTensor *)args[3].v_handle);
  double t0 = run_clock();
  kiln_func_call(f, args, codes, nargs, &ret, &rc);
  return run_clock() - t0;
}

/* The best of reps runs after a warm-up: on a shared machine other work
 * only ever slows a run down, so the fastest run is the kernel's speed. */
static double time_run(KilnFunction *f, KilnValue *args, int *codes, int nargs, int reps) {
  run_once(f, args, codes, nargs); /* warm up */
  double best = 1e30;
  for (int r = 0; r < reps; r++) {
    double t = run_once(f, args, codes, nargs);
    if (t < best) best = t;
  }
  return best;
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof(double), by_value);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* A layer's kernel, built: its function, arrays and call arguments. */
typedef struct Built {
  KilnModule *m;
  KilnFunction *f;
  int nargs;
  DLTensor *arr[5];
  KilnValue av[5];
  int codes[5];
  ConfigEntity *cfg;
} Built;

/* Instantiate tm for wl with cfg (bias + relu fused when epilogue), build
 * it and allocate its arrays (inputs random).  false + message on failure. */
static bool silu_epilogue; /* --silu: the fused epilogue is bias + SiLU */

/* src's L->c channels into dst, both NCHW[x]c with their own blocks and
 * the same batch (dst's extra channels, if any, left as they are). */
static void copy_reblocked(const Layer *L, const DLTensor *src, DLTensor *dst) {
  int64_t HW = L->h * L->w, b1 = src->shape[4], b2 = dst->shape[4];
  int64_t s1 = src->shape[1] * b1 * HW, s2 = dst->shape[1] * b2 * HW; /* a sample's floats */
  for (int64_t n = 0; n < src->shape[0]; n++)
    for (int64_t c = 0; c < L->c; c++)
      for (int64_t i = 0; i < HW; i++)
        ((float *)dst->data)[n * s2 + ((c / b2) * HW + i) * b2 + c % b2] =
            ((const float *)src->data)[n * s1 + ((c / b1) * HW + i) * b1 + c % b1];
}

/* --in-place: the grouped conv's data in blocks of this many channels
 * (0: its own block) */
static int64_t data_block;

/* The grouped conv of wl with cfg reading data in blocks of data_block
 * channels, its channels padded to a multiple of it (the template's
 * compute repacks; group_conv2d.c): schedule and [data, kernel, conv].
 * false where the config's input block does not divide data_block or
 * already is it. */
static bool instantiate_wide(const Template *tm, Workload *wl, ConfigEntity *cfg, Schedule **s, int *nargs,
                             Tensor ***args) {
  int nin;
  Tensor **in;
  if (tm->placeholders(target_host(), wl, cfg, &nin, &in)) return false;
  int64_t ib = te_dim(in[0], 4), C = te_dim(in[0], 1) * ib;
  if (ib >= data_block || data_block % ib) return false;
  int64_t cp = (C + data_block - 1) / data_block * data_block;
  in[0] = te_placeholder_c("data", 5, (int64_t[]){te_dim(in[0], 0), cp / data_block, te_dim(in[0], 2), te_dim(in[0], 3),
                                                  data_block},
                           DT_F32);
  Tensor *conv = tm->compute(target_host(), wl, cfg, 2, in);
  if (!conv) return false;
  *s = te_create_schedule(1, &conv);
  if (tm->schedule(target_host(), *s, cfg, conv, 1, &conv)) return false;
  *args = KNEWN(Tensor *, 3);
  (*args)[0] = in[0], (*args)[1] = in[1], (*args)[2] = conv;
  *nargs = 3;
  return true;
}

static bool build(const Template *tm, Workload *wl, ConfigEntity *cfg, bool epilogue, const char *keep, int64_t oc,
                  bool wide, Built *b) {
  memset(b, 0, sizeof *b);
  b->cfg = cfg;
  Schedule *s = NULL;
  int nargs = 0;
  Tensor **args = NULL, **fused_args = KNEWN(Tensor *, 5);
  if (!cfg || (wide ? !instantiate_wide(tm, wl, cfg, &s, &nargs, &args)
                    : template_instantiate(tm, target_host(), wl, cfg, &s, &nargs, &args) != 0))
    return false;
  if (epilogue) {
    /* the same conv with bias + relu fused: the template's group schedule */
    Tensor *conv = args[2];
    int64_t ocb = te_dim(conv, 4);
    Tensor *bias = te_placeholder_c("bias", 4, (int64_t[]){oc / ocb, 1, 1, ocb}, DT_F32);
    Expr **v = te_axis_vars(5, NULL);
    Expr *z = ir_i32(0);
    Tensor *add = te_compute("T_add", 5, conv->shape, v, ir_add(te_read(conv, 5, v), te_read4(bias, v[1], z, z, v[4])),
                             "broadcast");
    nargs = 4;
    if (residual_epilogue) { /* the residual: an input of the output's shape, before the relu */
      int64_t shp[5];
      te_shape_const(conv, shp);
      fused_args[3] = te_placeholder_c("residual", 5, shp, DT_F32);
      v = te_axis_vars(5, NULL);
      add = te_compute("T_add", 5, conv->shape, v, ir_add(te_read(add, 5, v), te_read(fused_args[3], 5, v)),
                       "broadcast");
      nargs = 5;
    }
    v = te_axis_vars(5, NULL);
    Tensor *relu;
    if (silu_epilogue) {
      Tensor *sig = topi_unary(TOPI_sigmoid, add);
      relu = sig ? topi_binary(TOPI_multiply, add, sig) : NULL;
      if (!relu) return false;
    } else {
      relu = te_compute("T_relu", 5, conv->shape, v, ir_max(te_read(add, 5, v), ir_f32(0)), "elemwise");
    }
    s = te_create_schedule(1, &relu);
    if (tm->schedule(target_host(), s, cfg, conv, 1, &relu)) return false;
    fused_args[0] = args[0], fused_args[1] = args[1], fused_args[2] = bias, fused_args[nargs - 1] = relu;
    args = fused_args;
  }
  CompileOptions copt = {NULL, NULL, keep};
  b->m = kiln_build(s, nargs, args, "conv", NULL, &copt);
  if (!b->m || kiln_module_get_function(b->m, "conv", &b->f)) return false;
  b->nargs = nargs;
  for (int i = 0; i < nargs; i++) {
    int64_t shp[8];
    te_shape_const(args[i], shp);
    b->arr[i] = array_of(args[i]->ndim, shp, args[i]->dtype);
    if (i < nargs - 1)
      for (int64_t j = 0; j < numel(b->arr[i]); j++) ((float *)b->arr[i]->data)[j] = frand();
    b->av[i].v_handle = b->arr[i], b->codes[i] = KILN_DLTENSOR;
  }
  return true;
}

static void release(Built *b) {
  kiln_func_free(b->f);
  for (int i = 0; i < b->nargs; i++) kiln_array_free(b->arr[i]);
  kiln_module_free(b->m);
}

/* U = G g G^T of the direct kernel's weights, in the Winograd layout
 * [alpha, alpha, OC/ob, IC, ob]. */
static void winograd_kernel(const Layer *L, const DLTensor *k, DLTensor *u, int64_t m) {
  int64_t ib = k->shape[4], ob6 = k->shape[5], ob = u->shape[4], alpha = m + 2, IC = L->c, OC = L->oc;
  double AT[4 * 6], G[6 * 3], BT[6 * 6];
  topi_winograd_matrices((int)m, 3, AT, G, BT);
  const float *K = k->data;
  float *U = u->data;
  for (int64_t o = 0; o < OC; o++)
    for (int64_t c = 0; c < IC; c++) {
      double g[3][3];
      for (int y = 0; y < 3; y++)
        for (int x = 0; x < 3; x++)
          g[y][x] = K[((((o / ob6) * (IC / ib) + c / ib) * 3 + y) * 3 + x) * ib * ob6 + (c % ib) * ob6 + o % ob6];
      for (int64_t e = 0; e < alpha; e++)
        for (int64_t n = 0; n < alpha; n++) {
          double s = 0;
          for (int y = 0; y < 3; y++)
            for (int x = 0; x < 3; x++) s += G[e * 3 + y] * g[y][x] * G[n * 3 + x];
          U[(((e * alpha + n) * (OC / ob) + o / ob) * IC + c) * ob + o % ob] = (float)s;
        }
    }
}

/* Relative L2 error of the Winograd output against the direct one (both
 * NCHW[x]c, blocks possibly different), over every sample. */
static double rel_err(const DLTensor *w, const DLTensor *d) {
  int64_t C = w->shape[1] * w->shape[4], H = w->shape[2], W = w->shape[3], bw = w->shape[4], bd = d->shape[4];
  double num = 0, den = 0;
  for (int64_t n = 0; n < w->shape[0]; n++) {
    const float *a = (const float *)w->data + n * C * H * W, *b = (const float *)d->data + n * C * H * W;
    for (int64_t c = 0; c < C; c++)
      for (int64_t i = 0; i < H * W; i++) {
        double x = a[((c / bw) * H * W + i) * bw + c % bw], y = b[((c / bd) * H * W + i) * bd + c % bd];
        num += (x - y) * (x - y), den += y * y;
      }
  }
  return sqrt(num / (den > 0 ? den : 1));
}

/* The largest relative error of 300 sampled outputs of b (layer L)
 * against the direct convolution. */
static double sampled_err(const Layer *L, const Built *b, bool epilogue, int64_t batch) {
  DLTensor *out = b->arr[b->nargs - 1];
  int64_t OH = out->shape[2], OW = out->shape[3], ocb = out->shape[4];
  double maxerr = 0;
  for (int t = 0; t < 300; t++) {
    int64_t oc = (int64_t)(rng = rng * 1664525u + 1013904223u) % L->oc, oh = (rng >> 4) % OH, ow = (rng >> 12) % OW,
            n = (rng >> 20) % batch;
    double ref = direct(L, b->arr[0], b->arr[1], n, oc, oh, ow);
    int64_t at = n * L->oc * OH * OW + (((oc / ocb) * OH + oh) * OW + ow) * ocb + oc % ocb;
    if (epilogue) {
      ref += ((float *)b->arr[2]->data)[oc];
      if (residual_epilogue) ref += ((float *)b->arr[3]->data)[at];
      if (silu_epilogue) ref = ref / (1 + exp(-ref));
      else if (ref < 0) ref = 0;
    }
    double got = ((float *)out->data)[at];
    double e = fabs(got - ref) / (1 + fabs(ref));
    if (e > maxerr) maxerr = e;
  }
  return maxerr;
}

static const char *config_text(const ConfigEntity *cfg) {
  StrBuf cs = {0};
  for (int i = 0; i < cfg->n; i++) {
    const KnobEntity *e = &cfg->e[i];
    if (e->kind == KNOB_SPLIT) {
      sb_printf(&cs, "%s=", e->name + 5);
      for (int j = 1; j < e->n; j++) sb_printf(&cs, "%s%lld", j > 1 ? "x" : "", (long long)e->ints[j]);
      sb_putc(&cs, ' ');
    } else if (e->val.kind == OPT_STR) {
      sb_printf(&cs, "%s=%s ", e->name, e->val.s ? e->val.s : "");
    } else {
      sb_printf(&cs, "%s=%lld ", e->name, (long long)e->val.i);
    }
  }
  const char *r = kstrdup(cs.data ? cs.data : "");
  sb_free(&cs);
  return r;
}

/* --bf16: one layer, float32 against bfloat16 in its two forms (see the
 * top of the file).  The bfloat16 kernels get the float32 kernel's weights
 * rounded to bfloat16 pairs and the same input. */
static void bf16_layer(const Layer *L, const char *cfg_text, bool epilogue, const char *keep, int reps, double peak,
                       double pb) {
  const Template *tm = template_lookup("conv2d_NCHWc.x86"), *tb = template_lookup("conv2d_NCHWc_bf16.x86");
  int st[2] = {L->stride, L->stride}, pad[4] = {L->pad, L->pad, L->pad, L->pad}, dl[2] = {1, 1};
  int64_t dshape[4] = {1, L->c, L->h, L->w}, kshape[4] = {L->oc, L->c, L->k, L->k};
  Workload *wl = wl_conv2d(tm->name, dshape, kshape, st, pad, dl, "float32", "float32");
  Workload *wb = wl_conv2d(tb->name, dshape, kshape, st, pad, dl, "float32", "float32");
  ConfigEntity *cf = cfg_text ? config_entity_from_json(cfg_text) : template_fallback(tm, target_host(), wl);
  ConfigEntity *cb[2] = {cf ? config_from_json(config_json(cf)) : NULL, NULL};
  if (cb[0] && topi_x86_conv_bf16_from_float32(target_host(), cb[0], wb, cfg_text != NULL)) cb[0] = NULL;
  if (cb[0] && config_set_other(cb[0], "bf16_dot", opt_str("fma")) && tb->check(target_host(), cb[0], wb) != 0)
    cb[0] = template_fallback(tb, target_host(), wb); /* an odd input block: the bfloat16 fallback for both */
  if (cb[0] && cfg_split_inner(cb[0], "tile_ic") != cfg_split_inner(cf, "tile_ic")) cf = NULL;
  if (cb[0]) cb[1] = config_from_json(config_json(cb[0]));
  if (cb[1]) config_set_other(cb[1], "bf16_dot", opt_str("vdpbf16ps"));
  Built b[3];
  memset(b, 0, sizeof b);
  if (!cf || !cb[0] || !cb[1] || !build(tm, wl, cf, epilogue, keep, L->oc, false, &b[0]) ||
      !build(tb, wb, cb[0], epilogue, keep, L->oc, false, &b[1]) ||
      !build(tb, wb, cb[1], epilogue, keep, L->oc, false, &b[2])) {
    printf("%-30s build failed: %s\n", L->name, cf ? kiln_get_error() : "no common even input block");
    return;
  }
  /* the same input and epilogue, the weights rounded to pairs */
  for (int j = 1; j < 3; j++) {
    memcpy(b[j].arr[0]->data, b[0].arr[0]->data, sizeof(float) * (size_t)numel(b[0].arr[0]));
    if (epilogue) memcpy(b[j].arr[2]->data, b[0].arr[2]->data, sizeof(float) * (size_t)L->oc);
    const float *K = b[0].arr[1]->data;
    uint32_t *P = b[j].arr[1]->data;
    for (int64_t i = 0; i < numel(b[j].arr[1]); i++) {
      int64_t ob = b[0].arr[1]->shape[5], o = i % ob, rest = i / ob; /* rest: [.., ib/2] */
      P[i] = ir_bf16_round(K[(rest * 2) * ob + o]) | ir_bf16_round(K[(rest * 2 + 1) * ob + o]) << 16;
    }
  }
  KilnValue ret;
  int rc;
  for (int j = 0; j < 3; j++)
    if (kiln_func_call(b[j].f, b[j].av, b[j].codes, b[j].nargs, &ret, &rc)) printf("  run failed: %s\n", kiln_last_error());
  double err[3] = {0};
  for (int j = 1; j < 3; j++) err[j] = rel_err(b[j].arr[b[j].nargs - 1], b[0].arr[b[0].nargs - 1]);
  DLTensor *out = b[0].arr[b[0].nargs - 1];
  double flops = 2.0 * L->oc * out->shape[2] * out->shape[3] * L->c * L->k * L->k;
  int r = reps ? reps : (flops > 2e9 ? 5 : flops > 2e8 ? 11 : 31);
  double med[2][3];
  for (int th = 1; th <= 2; th++) {
    set_threads(th);
    double *v[3];
    for (int j = 0; j < 3; j++) {
      v[j] = KNEWN(double, r);
      run_once(b[j].f, b[j].av, b[j].codes, b[j].nargs); /* warm up */
    }
    for (int i = 0; i < r; i++)
      for (int j = 0; j < 3; j++) v[j][i] = run_once(b[j].f, b[j].av, b[j].codes, b[j].nargs);
    for (int j = 0; j < 3; j++) med[th - 1][j] = flops / median(v[j], r) * 1e-9;
  }
  set_threads(1);
  printf("%-30s %-34s %7.1f %7.1f %5.0f%% | %7.1f %7.1f %5.2fx %7.1e | %7.1f %7.1f %5.2fx %5.0f%% %7.1e%s\n", L->name,
         config_text(cb[0]), med[0][0], med[1][0], 100 * med[0][0] / peak, med[0][1], med[1][1], med[0][1] / med[0][0],
         err[1], med[0][2], med[1][2], med[0][2] / med[0][0], 100 * med[0][2] / pb, err[2],
         err[1] > 1e-2 || err[2] > 1e-2 ? "  WRONG RESULT" : "");
  fflush(stdout);
  for (int j = 0; j < 3; j++) release(&b[j]);
}

int main(int argc, char **argv) {
  const char *only = NULL, *keep = NULL, *cfg_text = NULL, *wcfg_text = NULL, *vs_text = NULL;
  int reps = 0;
  int64_t batch = 1;
  bool epilogue = false, use_wino = true, dw = false, grouped = false, group_pad = false, bf16 = false, wino_batch = false;
  const char *form = "group_pad"; /* the form knob --group-pad / --group-pack compares (group_pad set) */
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--layer") && i + 1 < argc) only = argv[++i];
    else if (!strcmp(argv[i], "--keep") && i + 1 < argc) keep = argv[++i];
    else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--cfg") && i + 1 < argc) cfg_text = argv[++i];
    else if (!strcmp(argv[i], "--wcfg") && i + 1 < argc) wcfg_text = argv[++i];
    else if (!strcmp(argv[i], "--vs") && i + 1 < argc) vs_text = argv[++i];
    else if (!strcmp(argv[i], "--winograd")) wino_batch = true;
    else if (!strcmp(argv[i], "--epilogue")) epilogue = true;
    else if (!strcmp(argv[i], "--silu")) epilogue = silu_epilogue = true;
    else if (!strcmp(argv[i], "--residual")) epilogue = residual_epilogue = true;
    else if (!strcmp(argv[i], "--no-winograd")) use_wino = false;
    else if (!strcmp(argv[i], "--depthwise")) dw = true;
    else if (!strcmp(argv[i], "--grouped")) grouped = true;
    else if (!strcmp(argv[i], "--group-pad")) grouped = group_pad = true;
    else if (!strcmp(argv[i], "--group-pack")) grouped = group_pad = true, form = "group_pack";
    else if (!strcmp(argv[i], "--group-pair")) grouped = group_pad = true, form = "group_pair";
    else if (!strcmp(argv[i], "--cold")) cold = true;
    else if (!strcmp(argv[i], "--cpu-time")) cpu_time = true;
    else if (!strcmp(argv[i], "--in-place")) data_block = target_host()->vector_lanes;
    else if (!strcmp(argv[i], "--bf16")) bf16 = true;
    else if (!strcmp(argv[i], "--batch") && i + 1 < argc && atoi(argv[i + 1]) >= 1) batch = atoi(argv[++i]);
    else {
      fprintf(stderr,
              "usage: %s [--layer SUBSTR] [--keep DIR] [--reps N] [--cfg JSON] [--wcfg JSON] [--epilogue] [--silu] "
              "[--residual] [--no-winograd] [--batch N [--vs JSON | --winograd]] [--depthwise | --grouped | --group-pad | --group-pair | --group-pack | --bf16] [--in-place] [--cold] [--cpu-time]\n",
              argv[0]);
      return 2;
    }
  }
  if (residual_epilogue && (silu_epilogue || bf16 || wino_batch)) {
    fprintf(stderr, "%s: --residual is a relu epilogue of the float32 direct kernel: leave out --silu, --bf16 and "
                    "--winograd\n", argv[0]);
    return 2;
  }
  if (dw && grouped) {
    fprintf(stderr, "%s: --depthwise and --grouped (--group-pad) choose different layer tables; pass one\n", argv[0]);
    return 2;
  }
  if (data_block && (!grouped || group_pad || batch > 1)) {
    fprintf(stderr, "%s: --in-place compares a grouped layer's input blocks at batch 1: pass --grouped, without "
                    "--group-pad or --batch\n", argv[0]);
    return 2;
  }
  if (group_pad && batch > 1) {
    fprintf(stderr, "%s: --group-pad compares at batch 1; leave out --batch\n", argv[0]);
    return 2;
  }
  if ((vs_text || wino_batch) && (batch == 1 || dw || grouped)) {
    fprintf(stderr, "%s: --vs and --winograd compare at batch N > 1 on the plain layers: pass --batch N\n", argv[0]);
    return 2;
  }
  /* at batch > 1 the second column is the unblocked (or --vs) config,
   * or with --winograd the Winograd kernel at the same batch */
  if ((batch > 1 && !wino_batch) || dw || grouped || residual_epilogue) use_wino = false;
  set_threads(1);
  double peak = bench_measure_peak(), peak2 = bench_measure_peak_threads(2);
  printf("FMA peak (measured): one core %.1f GFLOP/s, two threads at once %.1f (%.2fx); SIMD width %d floats\n", peak,
         peak2, peak2 / peak, target_host()->vector_lanes);
  if (bf16) {
    double pb = bench_measure_peak_bf16();
    if (pb <= 0) {
      fprintf(stderr, "%s --bf16: this CPU (or compiler) has no AVX512-BF16\n", argv[0]);
      return 1;
    }
    printf("VDPBF16PS peak (one core, measured): %.1f GFLOP/s = %.2fx the FMA peak\n"
           "GFLOP/s of the convolution, medians of alternating runs; x: against float32 (1 thread); %%peak of fma: of the "
           "FMA peak, of vdpbf16ps: of the VDPBF16PS peak; err: relative L2 error against float32\n\n",
           pb, pb / peak);
    printf("%-30s %-34s %7s %7s %6s | %7s %7s %6s %7s | %7s %7s %6s %6s %7s\n", "layer", "config (bf16_dot=fma / vdpbf16ps)",
           "fp32 1T", "fp32 2T", "%peak", "fma 1T", "fma 2T", "x", "err", "vdp 1T", "vdp 2T", "x", "%bpeak", "err");
    for (size_t li = 0; li < sizeof layers / sizeof layers[0]; li++) {
      const Layer *L = &layers[li];
      if ((only && !strstr(L->name, only)) || L->c % 2) continue;
      KArena *ar = kiln_arena_new();
      kiln_arena_push(ar);
      bf16_layer(L, cfg_text, epilogue, keep, reps, peak, pb);
      kiln_arena_pop();
      kiln_arena_free(ar);
    }
    return 0;
  }
  if (use_wino)
    printf("winograd: effective GFLOP/s (direct FLOPs / time), medians of alternating runs; direct columns are "
           "medians too where a winograd column is shown\n");
  if (group_pad && !strcmp(form, "group_pack"))
    printf("group-pack: the fallback with group_pack (groups of fewer channels than a vector packed side by side in "
           "whole vectors, a permuted load per FMA) against the same without it (first columns), medians of "
           "alternating runs\n");
  else if (group_pad && !strcmp(form, "group_pair"))
    printf("group-pair: the fallback with group_pair (two groups in whole vectors, the middle one blended) against "
           "the same with group_pad instead (first columns: a group as whole vectors, half the columns), medians of "
           "alternating runs\n");
  else if (group_pad)
    printf("group-pad: the fallback with group_pad (each group's output channels computed as a whole number of "
           "%d-lane vectors, zero weights, the real ones kept) against the same without it (first columns), in the "
           "real layer's GFLOP/s, medians of alternating runs\n",
           target_host()->vector_lanes);
  if (data_block)
    printf("in-place: the fallback reading its data in %lld-channel blocks (channels padded to a multiple; the repack "
           "folded into the padded slab) against the same config on its own block, in GFLOP/s, medians of alternating "
           "runs; x = own-block time / in-place time\n",
           (long long)data_block);
  if (batch > 1 && wino_batch)
    printf("batch %lld: the direct and the Winograd kernel at this batch (3x3 stride-1 layers; the others one column)\n",
           (long long)batch);
  else if (batch > 1)
    printf("batch %lld: the fallback config, and %s, medians of alternating runs\n", (long long)batch,
           vs_text ? "the --vs config (second columns; x = fallback time / its)" : "the same with tile_n=1 (no batch blocking)");
  printf("\n%-30s %-30s %8s %8s %6s %6s", "layer",
         dw ? "depthwise fallback config" : grouped ? "grouped fallback config" : "direct fallback config",
         "1 thread", "2 threads", "%peak", "%2peak");
  if (dw) printf("  %8s %8s", "GB/s 1T", "GB/s 2T");
  if (use_wino) printf("  %-40s %8s %8s %6s %6s %8s", "winograd fallback config", "wino 1T", "wino 2T", "x 1T", "x 2T", "rel err");
  if (group_pad) printf("  %-30s %8s %8s %6s %6s", kfmt("%s fallback config", form), "form 1T", "form 2T", "x 1T", "x 2T");
  if (batch > 1 && vs_text) printf("  %-30s %8s %8s %6s %6s %8s", "--vs config", "vs 1T", "vs 2T", "x 1T", "x 2T", "rel err");
  else if (batch > 1 && !wino_batch) printf("  %8s %8s %6s %6s %8s", "n1 1T", "n1 2T", "x 1T", "x 2T", "rel err");
  if (data_block) printf("  %8s %8s %6s %6s %8s", "inpl 1T", "inpl 2T", "x 1T", "x 2T", "rel err");
  printf("\n");
  const Template *tm =
      template_lookup(dw ? "depthwise_conv2d_NCHWc.x86" : grouped ? "group_conv2d_NCHWc.x86" : "conv2d_NCHWc.x86");
  const Layer *table = dw ? dw_layers : grouped ? group_layers : layers;
  size_t ntable = dw        ? sizeof dw_layers / sizeof dw_layers[0]
                  : grouped ? sizeof group_layers / sizeof group_layers[0]
                            : sizeof layers / sizeof layers[0];
  const Template *wt = template_lookup("conv2d_NCHWc_winograd.x86");
  double sum1 = 0, sum2 = 0, flops_all = 0, t1_all = 0, t2_all = 0;
  int nl = 0;
  for (size_t li = 0; li < ntable; li++) {
    const Layer *L = &table[li];
    if (only && !strstr(L->name, only)) continue;
    KArena *ar = kiln_arena_new();
    kiln_arena_push(ar);
    int64_t G = groups_of(L);
    Workload *wl = grouped ? wl_group_conv2d(tm->name, (int64_t[]){batch, L->c, L->h, L->w},
                                             (int64_t[]){L->oc, L->c / G, L->k, L->k}, (int[]){L->stride, L->stride},
                                             (int[]){L->pad, L->pad, L->pad, L->pad}, (int[]){1, 1}, G, "float32",
                                             "float32")
                           : wl_conv2d_real(tm->name, (int64_t[]){batch, L->c, L->h, L->w},
                                            (int64_t[]){L->oc, dw ? 1 : L->c, L->k, L->k}, (int[]){L->stride, L->stride},
                                            (int[]){L->pad, L->pad, L->pad, L->pad}, (int[]){1, 1},
                                            L->real ? L->real : L->c, "float32", "float32");
    /* --group-pad: the fallback (the padded-group form where the space
     * has the group_pad knob) against the same without it */
    ConfigEntity *fb = template_fallback(tm, target_host(), wl), *unpadded = NULL;
    bool gp = group_pad && fb && cfg_other_int(fb, form, 0);
    if (gp) {
      unpadded = config_new();
      for (int i = 0; i < fb->n; i++) config_set(unpadded, &fb->e[i]);
      config_set_other(unpadded, form, opt_bool(false));
      int64_t OW = (L->w + 2 * L->pad - L->k) / L->stride + 1;
      int64_t budget = x86_reg_budget(target_host()); /* group_pair against group_pad's half */
      config_set_split(unpadded, "tile_ow", 2,
                       (int64_t[]){-1, x86_conv_block_cols(OW, strcmp(form, "group_pair") ? budget : budget / 2)});
    }
    Built d, w;
    memset(&w, 0, sizeof w);
    if (!build(tm, wl, cfg_text ? config_entity_from_json(cfg_text) : gp ? unpadded : fb, epilogue, keep, L->oc, false,
               &d)) {
      printf("%-30s build failed: %s\n", L->name, kiln_get_error());
      kiln_arena_pop();
      kiln_arena_free(ar);
      continue;
    }
    bool wino = use_wino && L->k == 3 && L->stride == 1;
    bool nb = false; /* batch > 1: w is the fallback without batch blocking (or --vs) */
    if (gp) {
      if (!build(tm, wl, fb, epilogue, keep, L->oc, false, &w)) {
        printf("%-30s padded build failed: %s\n", L->name, kiln_get_error());
        gp = false;
      }
    }
    if (batch > 1 && !wino_batch) {
      ConfigEntity *c1 = vs_text ? config_entity_from_json(vs_text) : template_fallback(tm, target_host(), wl);
      if (c1 && !vs_text) config_set_other(c1, "tile_n", opt_int(1));
      if (!build(tm, wl, c1, epilogue, keep, L->oc, false, &w)) {
        printf("%-30s tile_n=1 build failed: %s\n", L->name, kiln_get_error());
      } else {
        nb = true;
        for (int i = 0; i < d.nargs - 1; i++) memcpy(w.arr[i]->data, d.arr[i]->data, sizeof(float) * (size_t)numel(d.arr[i]));
      }
    }
    bool ip = false; /* --in-place: w reads the data in blocks of data_block */
    if (data_block && build(tm, wl, d.cfg, epilogue, keep, L->oc, true, &w)) {
      ip = true;
      copy_reblocked(L, d.arr[0], w.arr[0]); /* the padded channels keep random values: never read */
      for (int i = 1; i < d.nargs - 1; i++)
        memcpy(w.arr[i]->data, d.arr[i]->data, sizeof(float) * (size_t)numel(d.arr[i]));
    }
    kiln_clear_error();
    int64_t wm = topi_x86_winograd_tile_size(L->c, L->oc, L->h, L->w); /* pad 1: output = input size */
    if (wino) {
      Workload *ww = wl_conv2d(wt->name, (int64_t[]){batch, L->c, L->h, L->w}, (int64_t[]){L->oc, L->c, 3, 3},
                               (int[]){1, 1}, (int[]){L->pad, L->pad, L->pad, L->pad}, (int[]){1, 1}, "float32", "float32");
      if (!build(wt, ww, wcfg_text ? config_entity_from_json(wcfg_text) : template_fallback(wt, target_host(), ww), epilogue, keep,
                 L->oc, false, &w)) {
        printf("%-30s winograd build failed: %s\n", L->name, kiln_get_error());
        wino = false;
      } else {
        /* the same data (its channel block may differ), the same weights */
        copy_reblocked(L, d.arr[0], w.arr[0]);
        winograd_kernel(L, d.arr[1], w.arr[1], wm);
        if (epilogue) {
          memcpy(w.arr[2]->data, d.arr[2]->data, sizeof(float) * (size_t)L->oc); /* [OC/b, 1, 1, b] is in order */
          if (d.arr[2]->shape[3] != w.arr[2]->shape[3]) printf("  (bias blocks differ: the epilogues differ)\n");
        }
      }
    }
    KilnValue ret;
    int rc;
    if (kiln_func_call(d.f, d.av, d.codes, d.nargs, &ret, &rc)) printf("  run failed: %s\n", kiln_last_error());
    if ((wino || nb || gp || ip) && kiln_func_call(w.f, w.av, w.codes, w.nargs, &ret, &rc))
      printf("  second run failed: %s\n", kiln_last_error());
    paired_kernel = grouped && topi_x86_group_conv_paired(target_host(), L->oc, G, d.cfg);
    double maxerr = sampled_err(L, &d, epilogue, batch);
    paired_kernel = gp && topi_x86_group_conv_paired(target_host(), L->oc, G, w.cfg);
    if (gp) maxerr = fmax(maxerr, sampled_err(L, &w, epilogue, batch));
    paired_kernel = false;
    double werr = wino || nb || ip ? rel_err(w.arr[w.nargs - 1], d.arr[d.nargs - 1]) : 0;
    int64_t OH = d.arr[d.nargs - 1]->shape[2], OW = d.arr[d.nargs - 1]->shape[3];
    double flops = 2.0 * batch * L->oc * OH * OW * (dw ? 1 : L->real ? L->real : L->c / G) * L->k * L->k;
    /* the bytes a depthwise layer must move at least: input, weights, output */
    double bytes = 4.0 * (batch * L->c * L->h * L->w + L->oc * L->k * L->k + batch * L->oc * OH * OW);
    int r = reps ? reps : (flops > 2e9 ? 5 : flops > 2e8 ? 11 : 31);
    double t1, t2, w1 = 0, w2 = 0;
    if (!wino && !nb && !gp && !ip) {
      set_threads(1);
      t1 = time_run(d.f, d.av, d.codes, d.nargs, r);
      set_threads(2);
      t2 = time_run(d.f, d.av, d.codes, d.nargs, r);
    } else {
      double *v[4];
      for (int i = 0; i < 4; i++) v[i] = KNEWN(double, r);
      for (int th = 1; th <= 2; th++) {
        set_threads(th);
        run_once(d.f, d.av, d.codes, d.nargs); /* warm up */
        run_once(w.f, w.av, w.codes, w.nargs);
        for (int i = 0; i < r; i++) {
          v[(th - 1) * 2][i] = run_once(d.f, d.av, d.codes, d.nargs);
          v[(th - 1) * 2 + 1][i] = run_once(w.f, w.av, w.codes, w.nargs);
        }
      }
      t1 = median(v[0], r), w1 = median(v[1], r), t2 = median(v[2], r), w2 = median(v[3], r);
    }
    set_threads(1);
    double g1 = flops / t1 * 1e-9, g2 = flops / t2 * 1e-9;
    printf("%-30s %-30s %8.1f %8.1f %5.0f%% %5.0f%%", L->name, config_text(d.cfg), g1, g2, 100 * g1 / peak,
           100 * g2 / peak2);
    if (dw) printf("  %8.1f %8.1f", bytes / t1 * 1e-9, bytes / t2 * 1e-9);
    if (gp) printf("  %-30s %8.1f %8.1f %5.2fx %5.2fx", config_text(w.cfg), flops / w1 * 1e-9, flops / w2 * 1e-9, t1 / w1, t2 / w2);
    else if (group_pad) printf("  %-30s", kfmt("(no %s knob)", form));
    if (nb && vs_text) printf("  %-30s %8.1f %8.1f %5.2fx %5.2fx %8.1e", config_text(w.cfg), flops / w1 * 1e-9, flops / w2 * 1e-9, t1 / w1, t2 / w2, werr);
    else if (nb) printf("  %8.1f %8.1f %5.2fx %5.2fx %8.1e", flops / w1 * 1e-9, flops / w2 * 1e-9, w1 / t1, w2 / t2, werr);
    if (ip) printf("  %8.1f %8.1f %5.2fx %5.2fx %8.1e", flops / w1 * 1e-9, flops / w2 * 1e-9, t1 / w1, t2 / w2, werr);
    if (wino)
      printf("  %-40s %8.1f %8.1f %5.2fx %5.2fx %8.1e", config_text(w.cfg), flops / w1 * 1e-9, flops / w2 * 1e-9, t1 / w1,
             t2 / w2, werr);
    printf("%s%s\n", maxerr > 1e-3 ? "  WRONG RESULT" : "",
           werr > 1e-3 ? (nb || ip ? "  OUTPUTS DIFFER" : "  WRONG WINOGRAD RESULT") : "");
    fflush(stdout);
    sum1 += g1, sum2 += g2, nl++;
    flops_all += flops, t1_all += t1, t2_all += t2;
    release(&d);
    if (wino || nb || gp || ip) release(&w);
    kiln_arena_pop();
    kiln_arena_free(ar);
  }
  if (nl)
    printf("\n%d layers (direct): mean %.1f GFLOP/s (1 thread), %.1f (2 threads); all layers once: %.1f / %.1f GFLOP/s = "
           "%.0f%% / %.0f%% of peak\n",
           nl, sum1 / nl, sum2 / nl, flops_all / t1_all * 1e-9, flops_all / t2_all * 1e-9,
           100 * flops_all / t1_all * 1e-9 / peak, 100 * flops_all / t2_all * 1e-9 / peak2);
  return 0;
}
