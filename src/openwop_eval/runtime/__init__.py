"""What a running eval process needs around it: the one clock of records and events, the
garbage collector's settings, and a lifeline that ends a child with its parent."""
