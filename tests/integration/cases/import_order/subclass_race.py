# import_order/subclass_race.py: after sub_tuner.py
race_once(tuner)
print("DONE")
