// Tests of the gate (to be written).
