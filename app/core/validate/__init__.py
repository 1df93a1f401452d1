"""Whether a spec is one the hook runs: normalised, checked rule by rule, its templates, and the
size rule with what a value costs in Metacontroller's copies and in parsing."""
