#!/usr/bin/env python3
"""Regenerates tests/preflight/expected/*.json from tests/fixtures/lspci with pciutils.

The expected values are what `lspci -F FILE -vv` (pciutils, independent of
ringserve) prints for each device:
  * hex dumps: the file, with mail quoting ("> ") removed, is decoded by
    `lspci -F <copy> -vv`; the printed LnkCap/LnkSta/DevCap/DevCtl/LnkCtl
    values are recorded;
  * `lspci -vv` texts (no hex rows): the values lspci printed when the text
    was captured are read from the text itself.
Run once and check the output in; the tests never need lspci.
Usage: tests/preflight/make_expected.py [--lspci /usr/bin/lspci]
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "fixtures", "lspci")
OUT = os.path.join(HERE, "expected")

HEADER = re.compile(r"^(?:([0-9a-fA-F]{4,6}):)?([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])(?: |$)")
ROW = re.compile(r"^([0-9a-fA-F]{2,8}):((?: [0-9a-fA-F]{2})+) ?$")


def unquote(line):
    line = line.rstrip("\r")
    while line.startswith(">"):
        line = line[1:]
        if line.startswith(" "):
            line = line[1:]
    return line


def bdf_of(m):
    dom = int(m.group(1), 16) if m.group(1) else 0
    return "%04x:%s:%s.%s" % (dom, m.group(2).lower(), m.group(3).lower(), m.group(4))


def hex_devices(lines):
    """bdf -> {offset: byte} for devices that have hex rows (first dump wins)."""
    devices, current = {}, None
    for line in lines:
        if not line.strip():
            current = None
            continue
        m = HEADER.match(line)
        if m:
            bdf = bdf_of(m)
            current = None if bdf in devices else {}
            if current is not None:
                devices[bdf] = current
            continue
        r = ROW.match(line)
        if r and current is not None:
            off = int(r.group(1), 16)
            for i, b in enumerate(r.group(2).split()):
                current[off + i] = int(b, 16)
    return {k: v for k, v in devices.items() if v}


def text_blocks(lines):
    """bdf -> collapsed text of the longest block for that address."""
    blocks, order, cur = {}, [], None
    for line in lines:
        line = line.replace("\u00a0", " ")
        m = HEADER.match(line)
        if m:
            cur = bdf_of(m)
            blocks.setdefault(cur, []).append([line])
            if cur not in order:
                order.append(cur)
            continue
        if cur is not None:
            blocks[cur][-1].append(line)
    out = {}
    for bdf in order:
        best = max(blocks[bdf], key=len)
        out[bdf] = (best[0], " ".join(" ".join(best[1:]).split()))
    return out


def aspm_words(text):
    if text.startswith("not supported") or text.startswith("Disabled"):
        return "disabled"
    words = []
    for w in re.split(r"[ ,;]", text):
        if w in ("L0s", "L1"):
            words.append(w)
        else:
            break
    return " ".join(words) if words else None


def field(body, key):
    """The decode of one register: from `key` to the next register key."""
    i = body.find(key)
    if i < 0:
        return None
    rest = body[i + len(key):]
    nxt = re.search(r"\b(DevCap|DevCtl|DevSta|LnkCap|LnkCtl|LnkSta|SltCap|SltCtl|SltSta|RootCap|"
                    r"RootCtl|RootSta|DevCap2|DevCtl2|LnkCap2|LnkCtl2|LnkSta2):|Capabilities:|"
                    r"Kernel driver|Kernel modules", rest)
    return rest[: nxt.start()] if nxt else rest


def speed(text):
    m = re.match(r"([0-9.]+) ?GT/s", text)
    return float(m.group(1)) if m else None


def values(header, body):
    d = {"pcie": False}
    m = re.search(r"Express \(v(\d+)\) ([A-Za-z/ -]+?)(?:,| \(|$)", body)
    if not m:
        return d
    d["pcie"] = True
    d["port_type"] = m.group(2).strip()
    f = field(body, "DevCap:")
    if f and (m := re.search(r"MaxPayload (\d+) bytes", f)):
        d["mps_cap"] = int(m.group(1))
    f = field(body, "DevCtl:")
    if f:
        if m := re.search(r"MaxPayload (\d+) bytes", f):
            d["mps"] = int(m.group(1))
        if m := re.search(r"MaxReadReq (\d+) bytes", f):
            d["mrrs"] = int(m.group(1))
    f = field(body, "LnkCap:")
    if f:
        if m := re.search(r"Speed (\S+?),", f):
            d["cap_speed_gts"] = speed(m.group(1))
        if m := re.search(r"Width x(\d+)", f):
            d["cap_width"] = int(m.group(1))
        if m := re.search(r"ASPM (.*)", f):
            d["aspm_cap"] = aspm_words(m.group(1))
    f = field(body, "LnkCtl:")
    if f and (m := re.search(r"ASPM (.*)", f)):
        d["aspm"] = aspm_words(m.group(1))
    f = field(body, "LnkSta:")
    if f:
        if m := re.search(r"Speed (\S+?)( \((downgraded|ok|overdriven)\))?,", f):
            d["speed_gts"] = speed(m.group(1))
            d["speed_downgraded"] = m.group(3) == "downgraded"
        if m := re.search(r"Width x(\d+)( \((downgraded|ok|overdriven)\))?", f):
            d["width"] = int(m.group(1))
            d["width_downgraded"] = m.group(3) == "downgraded"
    return d


def lspci_version(lspci):
    return subprocess.run([lspci, "--version"], capture_output=True, text=True).stdout.strip()


def expectations(path, lspci):
    raw = open(path, encoding="utf-8", errors="surrogateescape").read().split("\n")
    lines = [unquote(l) for l in raw]
    hexdevs = hex_devices(lines)
    name = os.path.basename(path)
    if hexdevs:
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False,
                                         encoding="utf-8", errors="surrogateescape") as tmp:
            tmp.write("\n".join(lines))
        try:
            out = subprocess.run([lspci, "-F", tmp.name, "-vv"], capture_output=True, text=True,
                                 env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"}, check=True).stdout
        finally:
            os.unlink(tmp.name)
        blocks = text_blocks(out.split("\n"))
        devices = []
        for bdf, data in hexdevs.items():
            top = max(data)
            missing = [r for r in range(0, top + 1, 16)
                       if not any((r + i) in data for i in range(16))]
            header, body = blocks[bdf]
            d = {"bdf": bdf, "header": header.split(" ", 1)[1]}
            d["unreachable"] = data.get(0) == 0xff and data.get(1) == 0xff
            d["missing_rows"] = ["%02x" % r for r in missing]
            d["config_bytes"] = len(data)
            if not d["unreachable"]:
                d.update(values(header, body))
            devices.append(d)
        return {"fixture": name, "kind": "hexdump",
                "source": "%s: lspci -F <fixture with '> ' quoting removed> -vv" %
                          lspci_version(lspci),
                "devices": devices}
    devices = []
    for bdf, (header, body) in text_blocks(lines).items():
        d = {"bdf": bdf, "header": header.split(" ", 1)[1][:80]}
        d.update(values(header, body))
        devices.append(d)
    return {"fixture": name, "kind": "vv",
            "source": "the lspci -vv text in the fixture itself", "devices": devices}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lspci", default="/usr/bin/lspci")
    args = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    for name in sorted(os.listdir(FIXTURES)):
        if not name.endswith(".txt"):
            continue
        exp = expectations(os.path.join(FIXTURES, name), args.lspci)
        with open(os.path.join(OUT, name.replace(".txt", ".json")), "w") as f:
            json.dump(exp, f, indent=1, sort_keys=True)
            f.write("\n")
        print("%s: %d devices (%s)" % (name, len(exp["devices"]), exp["kind"]))


if __name__ == "__main__":
    sys.exit(main())
