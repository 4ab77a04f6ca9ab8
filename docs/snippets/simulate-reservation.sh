curl -s -d '{"workspace_id": "ws_alpine", "contact_id": "ph_felix_huber", "listing_id": "lst_edelweiss_chalet", "status": "confirmed", "arrival_date": "2027-01-09", "departure_date": "2027-01-16"}' localhost:8080/__mock__/simulate/reservation
curl -s -d '{"id": "rs_felix_huber_edelweiss_chalet", "status": "cancelled"}' localhost:8080/__mock__/simulate/reservation
