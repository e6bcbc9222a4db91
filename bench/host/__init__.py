"""The HTTP host under open-loop load, alone and as replicas."""
