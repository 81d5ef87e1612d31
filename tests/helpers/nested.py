"""Seeded random HTML of nested elements, for the tests that compare a compiled pass with its
reference on many small pages."""


def nested_elements(rng, tags, max_depth: int, nest_chance: float, children: tuple = (1, 4),
                    leaves=None, depth: int = 0) -> str:
    """rng.randrange(*children) elements of `tags` (rng.choices), each holding such elements
    again while depth < max_depth and rng.random() < nest_chance, else a leaf: "x", or
    rng.choice(leaves) when `leaves` is given."""
    out = []
    for tag in rng.choices(tags, k=rng.randrange(*children)):
        if depth < max_depth and rng.random() < nest_chance:
            inner = nested_elements(rng, tags, max_depth, nest_chance, children, leaves, depth + 1)
        else:
            inner = "x" if leaves is None else rng.choice(leaves)
        out.append(f"<{tag}>{inner}</{tag}>")
    return "".join(out)
