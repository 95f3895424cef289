# `cuprobe report`'s test (report_test.cpp) records the bundled example simulated_storm (issue 14:
# "CI builds the report for the bundled examples"), which is not otherwise a dependency of the
# test binary. Examples are added after tests/, so the target is named here, not checked.
add_dependencies(cuprobe_tests simulated_storm)
