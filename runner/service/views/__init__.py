"""The views of the event, one sink a module, behind the store (router.EventRouter): the console,
the PGN file, the JSON snapshot, the live PGN, the progress bar, the EPD file and the alerts."""
