from datetime import date


def main(**params):                 # async def main(**params) works too
    day = date.fromisoformat(params["date"])
    print("looking up", day)        # ends up in the run's `logs`
    return {"message": f"Low tide on {day:%A}", "rawData": {"day": day.isoformat()}}
