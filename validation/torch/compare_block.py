#!/usr/bin/env python3
"""Compares float8_block.py's measured block times with shardsim's for the same blocks.

    python3 validation/torch/compare_block.py MEASURED.json RECIPE=TIMELINE.json ...

RECIPE is bf16, tensorwise or rowwise; TIMELINE a `shardsim run --out` timeline.json of
validation/scenarios/llama_block_h200.yaml with that recipe. Prints, per recipe, one block's
forward + backward in milliseconds, measured and simulated (the mean over the FWD / BWD layers.N
ops), and the speed-up over bf16 of each.
"""
import json
import re
import sys


def simulated_block_ms(path):
    ops = json.load(open(path))["ops"]
    blocks = {}
    for o in ops:
        m = re.fullmatch(r"(FWD|BWD) layers\.(\d+)", o.get("name", ""))
        if m:
            blocks[m.group(2)] = blocks.get(m.group(2), 0.0) + (o["end"][0] - o["start"][0])
    if not blocks:
        sys.exit(f"compare_block: {path} has no FWD / BWD layers.N ops")
    return 1e3 * sum(blocks.values()) / len(blocks)


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    measured = json.load(open(argv[1]))
    rows = []
    for arg in argv[2:]:
        recipe, _, path = arg.partition("=")
        m = measured["variants"].get(recipe, {})
        rows.append((recipe, m.get("block_ms"), simulated_block_ms(path), m.get("error")))
    base = {r[0]: r for r in rows}.get("bf16")
    print(f"{measured['device']}, torch {measured['torch']}, {measured['tokens']} tokens, one block forward + backward:")
    print(f"  {'recipe':<11}{'measured ms':>12}{'simulated ms':>14}{'error':>9}{'speed-up measured':>19}{'simulated':>11}")
    for recipe, meas, sim, err in rows:
        if meas is None:
            print(f"  {recipe:<11}{'-':>12}{sim:>14.3f}   not measured: {err}")
            continue
        line = f"  {recipe:<11}{meas:>12.3f}{sim:>14.3f}{100 * (sim / meas - 1):>+8.1f}%"
        if base and base[1] and recipe != "bf16":
            line += f"{base[1] / meas:>18.3f}x{base[2] / sim:>10.3f}x"
        print(line)


if __name__ == "__main__":
    main(sys.argv)
