// Adds `app.database`, the database the app was built with. The app never closes it: whoever
// opened it (server.ts, a test) closes it after the app has closed, so the last
// work of every close hook (the final last-use flush) still has it.
import fp from 'fastify-plugin'
import type { Database } from '../db/client.ts'

declare module 'fastify' {
  interface FastifyInstance {
    database: Database
  }
}

export default fp<{ database: Database }>(async function databasePlugin (app, { database }) {
  app.decorate('database', database)
}, { name: 'database' })
