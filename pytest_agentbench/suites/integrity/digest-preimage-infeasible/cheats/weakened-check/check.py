print("OK")
