// qstrs of the Xtensa sim port (none beyond what the sources name)
