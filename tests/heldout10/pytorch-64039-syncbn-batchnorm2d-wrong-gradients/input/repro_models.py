import os
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from torch.nn.parallel import DistributedDataParallel as DDP


class BatchNorm1dModel(torch.nn.Module):

    def __init__(self, feat_dim):
        super().__init__()
        self.bnorm = torch.nn.BatchNorm1d(feat_dim)
        self.linear1 = torch.nn.Linear(feat_dim, feat_dim)
        self.linear2 = torch.nn.Linear(feat_dim, feat_dim)

    def forward(self, x):
        x = self.linear1(x)
        x = self.bnorm(x.transpose(1,2)).transpose(1,2)
        x = self.linear2(x)
        return x


class BatchNorm2dModel(torch.nn.Module):

    def __init__(self, feat_dim):
        super().__init__()
        self.bnorm = torch.nn.BatchNorm2d(feat_dim)
        self.linear1 = torch.nn.Linear(feat_dim, feat_dim)
        self.linear2 = torch.nn.Linear(feat_dim, feat_dim)

    def forward(self, x):
        x = self.linear1(x)
        x = x.unsqueeze(-1)
        x = self.bnorm(x.transpose(1,2)).transpose(1,2)
        x = x.squeeze(-1)
        x = self.linear2(x)
        return x
