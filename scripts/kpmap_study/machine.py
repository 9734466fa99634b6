"""The machine a study runs on: host name, CPU model, core count and load."""
import os
import socket


def cpu_model(cpuinfo="/proc/cpuinfo"):
    """The first 'model name' of /proc/cpuinfo ('' where there is none, e.g. not Linux)."""
    try:
        with open(cpuinfo, encoding="utf-8", errors="replace") as f:
            for line in f:
                key, sep, value = line.partition(":")
                if sep and key.strip() == "model name":
                    return " ".join(value.split())
    except OSError:
        pass
    return ""


def load_1min():
    """The 1-minute load average ('' where the system has none)."""
    try:
        return f"{os.getloadavg()[0]:.2f}"
    except OSError:
        return ""


def machine():
    return {"hostname": socket.gethostname(), "cpu_model": cpu_model(), "cores": os.cpu_count() or "",
            "load_1min": load_1min()}
