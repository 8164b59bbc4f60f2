// Refuses strings the database cannot store, wherever they are in a request: a NUL
// character (U+0000) in the query, a path parameter or the body answers 400
// validation_failed naming the field, before any handler or query runs.
import fp from 'fastify-plugin'
import { invalidField } from '../errors.ts'
import { pathsWithNul } from '../lib/validation.ts'

export default fp(async function inputGuardPlugin (app) {
  app.addHook('preValidation', async (request) => {
    const parts: Array<[string, unknown]> = [['query', request.query], ['path', request.params], ['body', request.body]]
    for (const [part, value] of parts) {
      const [path] = pathsWithNul(value, part)
      if (path !== undefined) throw invalidField(path, 'must not contain the character U+0000')
    }
  })
}, { name: 'input-guard' })
