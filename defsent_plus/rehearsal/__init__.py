"""Rehearsals: any config run offline on random weights of its real architectures and capped stand-in data."""
