"""Bridges to agent frameworks: their tools in, our registry out (optional extras)."""
