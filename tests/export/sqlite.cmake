# The SQLite export's tests read the database through SQLite's C API, and record the bundled
# example's search storm (examples/simulated_storm).
target_link_libraries(cuprobe_tests PRIVATE SQLite::SQLite3)
add_dependencies(cuprobe_tests simulated_storm)
