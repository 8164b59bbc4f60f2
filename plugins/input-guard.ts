// Refuses strings the database cannot store, wherever they are in a request: a NUL
// character (U+0000) or a lone surrogate in the query, a path parameter or the body answers
// 400 validation_failed naming the field, before any handler or query runs.
import fp from 'fastify-plugin'
import { invalidField } from '../errors.ts'
import { unstorableStrings } from '../lib/validation.ts'

export default fp(async function inputGuardPlugin (app) {
  app.addHook('preValidation', async (request) => {
    const parts: Array<[string, unknown]> = [['query', request.query], ['path', request.params], ['body', request.body]]
    for (const [part, value] of parts) {
      const [found] = unstorableStrings(value, part)
      if (found !== undefined) throw invalidField(...found)
    }
  })
}, { name: 'input-guard' })
