"""Sessions: admission of new ones, routing to workers, lifetimes and endings."""
