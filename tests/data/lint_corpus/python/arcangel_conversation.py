import os
from dotenv import load_dotenv
from data.shared_settings import username, working_directory
from tools.list_tree import list_tree
from helpers.clock import read_time_and_date
load_dotenv()

time, date = read_time_and_date()

initial_system_prompt = {"role": "system", "content": (
    f"Right now the clock reads {time}. "
    f"Today's calendar date is {date}. "
    f"This machine runs the {os.name} family of systems."
    f"You serve the person signed in as {username}. "
    f"Your project folder is {working_directory}; it is already selected, so keep every file operation inside it. "
    f"Here is what the project folder holds at the moment {list_tree()}"
)}



history = [initial_system_prompt]
