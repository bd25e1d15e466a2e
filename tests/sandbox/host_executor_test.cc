// Tests of the host executor (to be written).
