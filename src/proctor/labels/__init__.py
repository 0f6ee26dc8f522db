"""Human labels in one home: what a reviewer may submit at the desk, ground truth,
agreement between people and with graders, the final labels other packages read, and the
labels file `proctor calibrate` reads and the desk exports (docs/architecture.md,
Packages). Their tables are the store's (`store/label_tables.py`).
"""
