"""Regenerate weights.pt (run once; the file is shipped with the bundle): python make_weights.py"""

from pathlib import Path

import torch

if __name__ == "__main__":
    torch.manual_seed(0)
    net = torch.nn.Sequential(torch.nn.Linear(6, 32), torch.nn.Tanh(), torch.nn.Linear(32, 1))
    torch.save(net.state_dict(), Path(__file__).parent / "weights.pt")
