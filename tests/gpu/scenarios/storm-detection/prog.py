"""A detection-style training job (written for this corpus; the held-out job of issue 28 was a
Mask R-CNN): two images a step drawn from six image sizes through a conv backbone, then a mask
head run on the positive proposals, whose NUMBER changes every step (RoIAlign crops of
torchvision.ops.roi_align). cudnn.benchmark on. The backbone sees six shapes (buckets); the mask
head's convolutions see a new batch dimension nearly every step: a storm, however few the
image sizes."""
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torchvision.ops import roi_align  # noqa: E402
import common as C  # noqa: E402

SIZES = [(480, 640), (512, 512), (576, 768), (640, 480), (704, 704), (768, 576)]


class Backbone(nn.Module):
    def __init__(self, width=64):
        super().__init__()
        layers, c = [], 3
        for i in range(3):  # stride 8
            layers += [nn.Conv2d(c, width, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(width),
                       nn.ReLU(inplace=True)]
            c = width
        self.body = nn.Sequential(*layers)

    def forward(self, x):
        return self.body(x)


class MaskHead(nn.Module):
    def __init__(self, width=64):
        super().__init__()
        self.convs = nn.Sequential(*[m for _ in range(4) for m in (nn.Conv2d(width, width, 3, padding=1),
                                                                     nn.ReLU(inplace=True))])
        self.up = nn.ConvTranspose2d(width, width, 2, stride=2)
        self.logits = nn.Conv2d(width, 1, 1)

    def forward(self, crops):
        return self.logits(F.relu(self.up(self.convs(crops))))


dev = C.setup(benchmark=True)
backbone, head = Backbone().to(dev), MaskHead().to(dev)
opt = torch.optim.SGD(list(backbone.parameters()) + list(head.parameters()), lr=0.01, momentum=0.9)
rng = random.Random(11)
steps = int(os.environ.get("STEPS", "24"))
t0 = time.time()
loss = None
for step in range(steps):
    h, w = SIZES[rng.randrange(len(SIZES))]
    images = torch.randn(2, 3, h, w, device=dev)
    n = rng.randrange(4, 160)  # positive proposals this step, over both images
    idx = torch.randint(0, 2, (n, 1), device=dev).float()
    xy = torch.rand(n, 2, device=dev) * torch.tensor([w * 0.7, h * 0.7], device=dev)
    wh = 16 + torch.rand(n, 2, device=dev) * 128
    boxes = torch.cat([idx, xy, xy + wh], dim=1)
    opt.zero_grad(set_to_none=True)
    feats = backbone(images)
    crops = roi_align(feats, boxes, output_size=14, spatial_scale=1 / 8, sampling_ratio=2, aligned=True)
    masks = head(crops)
    loss = F.binary_cross_entropy_with_logits(masks, torch.rand_like(masks)) + feats.mean() * 0
    loss.backward()
    opt.step()
    if step % 4 == 0:
        C.log("step", step, "image", h, w, "proposals", n, "loss", float(loss))
C.finish(dev, t0, steps, loss)
