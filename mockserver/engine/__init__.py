"""The engine: the request pipeline (app.MockApp) and the mock's state (state,
sessions, store, clock, journal, faults ...), handlers included. It imports
nothing of the standalone surface or the test integration."""
