// Placeholder until the host executor lands.
