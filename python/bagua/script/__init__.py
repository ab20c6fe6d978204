"""Console scripts: baguarun (bagua.script.baguarun:main)."""
