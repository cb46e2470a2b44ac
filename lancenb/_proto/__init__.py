"""Generated protobuf modules (private); regenerate with scripts/gen_protos.py."""
