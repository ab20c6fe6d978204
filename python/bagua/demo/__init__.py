"""The end-to-end demo (`python -m bagua.demo`, `./setup.sh demo`): every
algorithm trains scikit-learn's digits in 2-4 processes; a table and a plot
compare them. See __main__.py."""
