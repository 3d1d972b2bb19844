"""dpkit: the helper library behind the data-parallel training workbook.

Import modules, not names: ``from dpkit import devices`` then ``devices.setup(4)``.
Importing dpkit does nothing else: no TensorFlow start-up, no seeding, no plotting style.
"""

__version__ = "0.1.0"
