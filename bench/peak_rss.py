#!/usr/bin/python3
"""Runs a command, then writes its peak RSS in KiB to PREFIX.<MPI rank>. Usage: peak_rss.py PREFIX CMD..."""
import os, resource, subprocess, sys

rc = subprocess.call(sys.argv[2:])
rank = os.environ.get("OMPI_COMM_WORLD_RANK", "0")
with open(f"{sys.argv[1]}.{rank}", "w") as f:
    f.write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) + "\n")
sys.exit(rc)
