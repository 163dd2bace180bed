"""python -m inference_econ.cli"""

from . import main

main()
