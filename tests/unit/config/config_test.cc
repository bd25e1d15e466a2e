// Tests of the config loader (to be written).
