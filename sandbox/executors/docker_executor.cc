// Placeholder until the docker executor lands.
