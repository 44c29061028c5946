"""Report builders: the JSON document and its terminal rendering."""
