python -m mockserver robust --operations listContacts,listTickets,resolveTicket \
    -- python examples/robustness/python/check_desk.py
python -m mockserver robust --operations listContacts,listTickets,resolveTicket \
    -- node examples/robustness/node/check_desk.mjs
