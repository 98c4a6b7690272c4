return workflow('bk1', 'Booking agent', { executionOrder: 'v1' })
  .add(trigger({ type: '@n8n/n8n-nodes-langchain.chatTrigger', version: 1.3, config: { parameters: { options: {} }, position: [-384, 48], name: 'Chat with the studio' } }))
  .then(node({ type: '@n8n/n8n-nodes-langchain.agent', version: 2.2, config: { parameters: {
      options: {
        systemMessage: '=GOAL\n\nYou have three jobs, in this order:\n\nAnswer questions from the studio handbook (one lookup per request).\n\nFind free slots.\n\nBook a session.\n\nNever book before the client has confirmed a free slot.\nAll times are in Lisbon time.\n\nThe time now is {{ $now }}.\n\nTOOLS\n\n### handbook: reads the studio handbook. Use it once per request, only for questions about classes, prices and rules.\n\n### free_slots: returns the free slots for a day.\n\n### book: books one session. Call it once, after the client confirmed.\n\nRULES\nAnswer in three sentences at most. If the handbook does not say, say that it does not.\nPropose exactly three slots when asked for free times, and confirm the booking with the date, the time and the class name.'
      }
    }, position: [-160, 48], name: 'Studio Agent' } }));
