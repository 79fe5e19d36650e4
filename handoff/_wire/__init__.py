"""The values' wire form: the reference's JSON, read and written."""
