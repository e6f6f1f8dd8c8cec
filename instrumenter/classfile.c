/* placeholder until the class-file reader lands */
