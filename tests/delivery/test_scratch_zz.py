import time
import pytest
from askuser_app.delivery import engine
from askuser_app.delivery.engine import Busy
from askuser_app.delivery.chats import core
from askuser_app.models import Delivery
from django.db import connection
from django.test.utils import CaptureQueriesContext

@pytest.mark.django_db
def test_x(settings, owner, other_user):
    settings.TELEGRAM_BOT_TOKEN = "1:x"
    theirs = core.link_by_hand(other_user, "telegram", "888", chat_id="888")
    core.link_by_hand(owner, "telegram", "4242", chat_id="4242")
    Delivery.objects.bulk_create((Delivery(owner=other_user, channel="telegram", link=theirs, address="888", host="telegram", notice=f"n{n}") for n in range(30000)), batch_size=2000)
    with CaptureQueriesContext(connection) as q:
        c = engine._claim(24, Busy())
    with connection.cursor() as cur:
        for x in q.captured_queries[1:5]:
            t=time.perf_counter(); cur.execute(x["sql"]); cur.fetchall(); print("T", time.perf_counter()-t)
            cur.execute("EXPLAIN QUERY PLAN " + x["sql"]); print(x["sql"][:1000]); print(cur.fetchall())
