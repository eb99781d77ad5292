"""The tool rows: the data service's (`service`, with its record models in `service_models`) and
every row together (`table`), beside the portal's in `portal_tools`."""
