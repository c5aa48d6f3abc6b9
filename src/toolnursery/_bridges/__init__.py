"""Bridges to the agent frameworks: their tools in, our registry and batches out."""
