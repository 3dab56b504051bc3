# import_order/subclass_nested_single_thread.py: after sub_tuner.py
for i in range(3):
    tuner.run(i)
tuner.warmup(1)
print("DONE")
