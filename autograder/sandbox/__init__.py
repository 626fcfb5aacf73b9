"""Where student code runs: limits, bubblewrap, the zygote client, the provisioner."""
