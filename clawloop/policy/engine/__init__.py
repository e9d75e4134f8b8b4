"""The decode engine behind HFPolicy: prompt token ids in, reply token ids out.

engine.py (Engine: wires the rest), config.py (EngineConfig: its knobs), decode_loop.py (the
batch decode loop), prefix_cache.py (KV reuse across turns), drafter.py (guessed tokens),
fast_forward.py (a lean CPU forward pass), int8_linear.py (int8 Linear layers).
"""
