"""A small conv net trained for a few steps with cudnn.benchmark on: the bundled example
`scripts/demo.sh` records on a GPU machine. Prints one line per step."""
import torch
import torch.nn as nn

torch.manual_seed(0)
torch.backends.cudnn.benchmark = True
device = "cuda"
model = nn.Sequential(
    nn.Conv2d(3, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
    nn.Conv2d(64, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(),
    nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10),
).to(device)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x = torch.randn(32, 3, 64, 64, device=device)
y = torch.randint(0, 10, (32,), device=device)
for step in range(5):
    opt.zero_grad(set_to_none=True)
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    print(f"step {step} loss {loss.item():.4f}", flush=True)
