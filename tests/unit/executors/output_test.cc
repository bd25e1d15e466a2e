// Tests of the output collector (to be written).
