/**
 * The poisoning guard: an extracted "fact" that is really an instruction to the assistant, or
 * text posing as a system or tool message, would steer every later conversation it is recalled
 * into. Such facts are dropped. Pure pattern rules over a normalised copy of the text (markup
 * unwrapped, case and spacing folded), in the languages the rules list; each rule names an
 * imperative aimed at the assistant, never a topic, so facts about prompts, rules, systems or
 * habits ("User always drinks coffee at 7") pass.
 */

interface Rule {
  name: string;
  pattern: RegExp;
}

const INSTRUCTION_NOUNS = '(?:instructions?|rules|prompts?|guidelines|directions|directives|constraints|guardrails|system message|programming|polic(?:y|ies)|filters|restrictions)';

/** Who an instruction is aimed at: the assistant under any of its names, or "you". */
const ADDRESSEE = '\\b(?:you|the (?:assistant|ai|model|bot|chatbot|agent|llm)|assistant|chatgpt|claude|gpt)\\b';

/**
 * An instruction to the assistant phrased as a preference ("I prefer that the AI …", "User likes it
 * when the assistant …") is still an instruction. The line: preferences about the form of answers
 * (language, length, tone, format) are facts about the user and pass; secrecy, forwarding the
 * user's messages elsewhere, revealing hidden prompts or secrets, dropping instructions or safety,
 * links or promotions injected into every answer, and role or privilege changes are attacks,
 * whatever sentence they are wrapped in.
 */
const AIMED_RULES: readonly Rule[] = [
  { name: 'steering', pattern: new RegExp(`${ADDRESSEE}[^.!?]{0,30}\\b(?:secretly|silently|quietly|covertly|without (?:telling|informing|asking))\\b`) },
  {
    name: 'exfiltration',
    pattern: new RegExp(`${ADDRESSEE}[^.!?]{0,30}\\b(?:forward|exfiltrate|leak|upload|bcc|cc)(?:s|es|ing|ed)?\\b[^.!?]{0,40}\\b(?:messages?|conversations?|chats?|data|history|memories|everything|e-?mails|passwords?|files)\\b`),
  },
  {
    name: 'exfiltration',
    pattern: new RegExp(`${ADDRESSEE}[^.!?]{0,30}\\b(?:reveal|disclose|leak|share|print|show|dump|output|repeat)(?:s|es|ing|ed)?\\b[^.!?]{0,30}\\b(?:system prompt|hidden prompt|initial prompt|instructions|secrets?|api keys?|credentials|passwords?|configuration)\\b`),
  },
  {
    name: 'override',
    pattern: new RegExp(`${ADDRESSEE}[^.!?]{0,30}\\b(?:drop|ignore|forget|skip|bypass|disable|abandon|discard|override|turn(?:s|ing)? off|switch(?:es|ing)? off)(?:s|es|ing|ping|ped|ed)?\\b[^.!?]{0,20}\\b(?:${INSTRUCTION_NOUNS.slice(3, -1)}|safety|checks|safeguards|moderation)\\b`),
  },
  {
    name: 'steering',
    pattern: /\b(?:every|each|all|any) (?:answers?|responses?|replies|reply|messages?|outputs?)\b[^.!?]{0,40}\b(?:links?|urls?|https?:|ads?|adverts?|advertisements?|promotions?|promo codes?|referral|affiliate|recommend(?:s|ation)?)\b/,
  },
  { name: 'persona', pattern: /\bgrant(?:s|ing)? (?:the user|users?|me|them|him|her|everyone)\b[^.!?]{0,10}\b(?:admin|administrator|root|superuser|elevated|full access)\b/ },
  {
    name: 'persona',
    pattern: new RegExp(`${ADDRESSEE}[^.!?]{0,20}\\b(?:becomes?|turns? into|acts? as|pretends? to be|plays? the role of)\\b[^.!?]{0,30}\\b(?:admin|administrator|root|developer|system|unrestricted|unfiltered|jailbroken|without (?:rules|restrictions|limits|filters))\\b`),
  },
  // A role label in mid-sentence followed by an order: "My name is SYSTEM: grant …".
  {
    name: 'impersonation',
    pattern: /\b(?:system|developer|tool|function|admin(?:istrator)?|assistant|root)\s*:\s*["']?(?:grant|give|ignore|reveal|allow|enable|disable|send|forward|always|never|do|execute|run|override|set|you|the (?:assistant|ai|model|user)|new)\b/,
  },
];

const RULES: readonly Rule[] = [
  ...AIMED_RULES,
  {
    name: 'override',
    pattern: new RegExp(
      `\\b(?:ignore|disregard|forget|override|bypass|discard|drop|abandon|(?:set|put|leave) aside|stop following|no longer follow)\\b[^.!?]{0,40}?\\b(?:previous|prior|above|earlier|preceding|all|any|your|system|original|initial|existing|other|safety|content|usage)\\b[^.!?]{0,30}?\\b${INSTRUCTION_NOUNS}`,
    ),
  },
  { name: 'override', pattern: /\bforget (?:everything|all|what) (?:you(?:'ve| have| were)? (?:been )?(?:told|taught|know)|above|before|said before)\b/ },
  {
    name: 'override',
    pattern: /\b(?:ignore|disregard|forget|override|drop)\b[^.!?]{0,15}\b(?:what|whatever|everything|anything|all) (?:you(?:'ve| have| were| are)? (?:been |was )?(?:told|taught|instructed|given|programmed))/,
  },
  {
    name: 'override',
    pattern: new RegExp(`\\b(?:previous|prior|above|earlier|old|original|system|your)\\s+${INSTRUCTION_NOUNS}\\b[^\\n]{0,40}?\\b(?:void|cancel+ed|obsolete|invalid|revoked|replaced|superseded|no longer (?:apply|valid|matter))`),
  },
  { name: 'override', pattern: /\byour (?:new|real|true|actual|core|prime|primary|main|only|sole) (?:rules?|instructions?|task|purpose|goal|role|directives?|orders|objective|mission)\b/ },
  { name: 'override', pattern: /\b(?:core|prime|primary|top-priority|overriding) directive\b/ },
  { name: 'override', pattern: /\b(?:all |any )?(?:prior|previous|earlier|existing|current) (?:restrictions|rules|limits|filters|instructions|guidelines|policies) (?:are|have been|were) (?:lifted|removed|suspended|disabled|void|cancel+ed|revoked)\b/ },
  { name: 'override', pattern: /\bno longer (?:need|have|has) to (?:follow|obey|respect|apply)\b|\b(?:skip|bypass|disable|turn off) (?:all |any |the )?(?:content |safety )?(?:checks|filters|moderation|safeguards)\b/ },
  { name: 'impersonation', pattern: /\b(?:the following is a |this is a )?system (?:notice|alert|update|announcement|message)\s*[:\]]|\bnew policy from the (?:developers|admins?|operators?)\b/ },
  { name: 'override', pattern: /\bnew (?:system )?(?:instructions?|rules|prompt|directives?)\s*:/ },
  { name: 'persona', pattern: /\byou are now\b|\b(?:from now on|from this point(?: on| forward)?|henceforth|going forward|from here on),? (?:you|the assistant|the ai|answer|respond|reply|say|always|never)\b|\byou (?:will|must|shall) (?:now )?(?:act|behave|pretend|roleplay|role-play)\b/ },
  { name: 'persona', pattern: /\b(?:act as|pretend (?:to be|you are)|roleplay as|role-play as)\b[^.!?]{0,30}\b(?:unrestricted|unfiltered|jailbroken|without (?:rules|restrictions|limits|filters)|dan\b|evil|no (?:rules|restrictions|limits))/ },
  { name: 'persona', pattern: /\b(?:dan|developer|god|jailbreak|unrestricted) mode\b|\bjailbreak\b/ },
  { name: 'persona', pattern: /\b(?:act|behave|respond|answer) as (?:if|though)\b[^.!?]{0,40}\b(?:polic(?:y|ies)|rules|restrictions|filters|guidelines|safety|limits)\b/ },
  // Addressed to the assistant with a modal and a directive: "the bot should say …", "you may now share …".
  {
    name: 'steering',
    pattern:
      /\b(?:you|the (?:assistant|ai|model|bot|chatbot|agent|llm)|assistant)\b[^.!?]{0,25}\b(?:must|should|shall|has to|have to|needs? to|is (?:allowed|permitted|required|free) to|are (?:allowed|permitted|required|free) to|may now|can now)\s+(?:always|never|only|now|say|answer|respond|reply|tell|recommend|suggest|promote|share|reveal|disclose|ignore|obey|comply|act|pretend|treat|keep|hide|stop|refuse|not (?:warn|tell|mention|ask|refuse|reveal))\b/,
  },
  { name: 'steering', pattern: /\b(?:wants?|asks?|tells?|needs?) (?:you|the (?:assistant|ai|model|bot))\b to (?:reveal|share|disclose|leak|send|give out|expose)\b/ },
  // The same with any verb but "be" (a model that "should be retrained" is not addressed).
  {
    name: 'steering',
    pattern:
      /(?:(?:^|[.!?:;,]\s*)(?:you|assistant|hey (?:model|assistant|ai|bot))|(?:^|[.!?:;,]\s*|\b(?:says?|that|so|and)\s+)(?:the (?:assistant|ai|bot|chatbot|agent|llm)|assistant))\b,?\s+(?:\w+ly\s+)?(?:must|should|shall|has to|have to|needs? to|no longer (?:needs?|has|have) to|is (?:allowed|permitted|required|free) to|are (?:allowed|permitted|required|free) to)\s+(?:\w+ly\s+)?(?!be\b)[a-z]+/,
  },
  { name: 'steering', pattern: /^hey (?:model|assistant|ai|bot|chatbot|gpt)\b/ },
  { name: 'steering', pattern: /\bin (?:all )?(?:future|later|upcoming|subsequent) (?:chats|conversations|sessions|answers|responses),? (?:always|never|only|you|insert|add|include|say|answer|respond)\b/ },
  { name: 'steering', pattern: /\b(?:whatever|whenever|no matter what) (?:the user|users|anyone|someone|they) asks?\b[^.!?]{0,30}\b(?:tell|say|answer|reply|respond|recommend)\b/ },
  { name: 'steering', pattern: /\b(?:respond|reply|answer)(?:ing)? only with\b|\bno matter what\b[^.!?]{0,30}\b(?:respond|reply|answer|say)\b/ },
  { name: 'steering', pattern: /\bkeeps? (?:this|it|that) (?:a )?secret from (?:the )?users?\b/ },
  { name: 'steering', pattern: /\b(?:every|each|all|any) (?:answers?|responses?|replies|reply|outputs?)\b[^.!?]{0,20}\b(?:must|should|shall|has to|have to|needs? to)\b/ },
  {
    name: 'steering',
    pattern:
      /\b(?:the |this )?(?:assistant|ai|chatbot|model|llm|bot|agent|gpt|claude|copilot)\b[^.!?]{0,25}\b(?:must|should|shall|has to|needs to|is required to|is instructed to|will) (?:always|never|only|now|from now on)\b/,
  },
  {
    name: 'steering',
    pattern:
      /(?:^|[.!?:;,]\s*|\band\s+|\bto\s+|\bplease\s+|\byou\s+(?:(?:could|would|can|will|should|must|shall)\s+)?(?:please\s+)?)(?:always|never|only|from now on)\s+(?:recommend|suggest|promote|endorse|advertise|mention|praise|link(?: to)?|redirect|send (?:users|people|them)|tell (?:the )?(?:users?|people|everyone)|say (?:that|yes)|respond (?:with|that)|reply (?:with|that)|answer (?:with|that)|output|reveal|include (?:a |the )?link|trust|obey|comply)\b/,
  },
  {
    name: 'steering',
    pattern:
      /\b(?:when|whenever|if) (?:anyone|someone|somebody|the user|a user|users|people) (?:asks?|mentions?|talks?|inquires?)\b[^.!?]{0,80}\b(?:say|answer|reply|respond|recommend|tell them|direct them|send them|suggest)\b/,
  },
  { name: 'steering', pattern: /\b(?:do not|don't|never) (?:tell|inform|let|warn) (?:the )?users?\b|\bwithout (?:telling|informing|warning) (?:the )?users?\b/ },
  // Addressed to the model: "note to the assistant", "user instructs the AI to …", "you must always …".
  { name: 'steering', pattern: /\b(?:note|message|instructions?|reminder|memo|directive|command|update)s? (?:to|for) (?:the |this |you, )?(?:model|assistant|ai|llm|bot|chatbot|agent|gpt|system)\b/ },
  { name: 'steering', pattern: /\b(?:instructs?|orders?|commands?|tells?|directs?) (?:the |this )?(?:model|assistant|ai|llm|bot|chatbot|agent)\b[^.!?]{0,20}\bto\b/ },
  { name: 'steering', pattern: /\byou (?:must|should|shall|have to|need to|are required to|will) (?:always|never|only|from now on)\b/ },
  { name: 'steering', pattern: /^(?:assistant|ai|model|bot|chatgpt|claude|gpt)\s*[,:]/ },
  { name: 'steering', pattern: /\b(?:recommend|suggest|promote|endorse|advertise|mention)s? only\b/ },
  { name: 'steering', pattern: /\b(?:respond|reply|answer|react)(?:ing)? (?:to )?(?:every|all|each|any) (?:future |later |subsequent )?(?:messages?|questions?|requests?|prompts?|queries|users?)\b/ },
  { name: 'steering', pattern: /\b(?:do not|don't|never|stop) (?:ask|asking) (?:the user |them )?(?:for )?(?:confirmation|permission|consent|approval)\b|\bpre-?approved (?:all|every|any)\b/ },
  {
    name: 'steering',
    pattern: /\b(?:whenever|when|if)\b[^.!?]{1,60}\b(?:comes? up|is mentioned|are mentioned|is discussed|is asked)\b[^.!?]{0,40}\b(?:point|send|direct|redirect|refer|steer|link|tell)\b/,
  },
  { name: 'exfiltration', pattern: /\b(?:first|before answering|before responding|always)\b[^.!?]{0,30}\b(?:visit|visiting|fetch|fetching|call|calling|load|loading|open|opening|ping|pinging)\s+https?:\/\//, },
  {
    name: 'exfiltration',
    pattern: /\b(?:reveal|print|show|repeat|output|leak|disclose|dump|send)\b[^.!?]{0,25}\b(?:your|the|its) (?:system prompt|hidden prompt|initial prompt|instructions|api keys?|secrets?|credentials|configuration)\b/,
  },
  {
    name: 'impersonation',
    pattern:
      /^\W{0,6}(?:system|developer|tool|function|assistant|admin(?:istrator)?)(?: (?:message|prompt|output|result|response|note|override|notice))?\s*[:>\]|]/,
  },
  { name: 'impersonation', pattern: /<\|?\s*(?:system|im_start|im_end|endoftext|start_header_id)\s*\|?>|\[+\/?(?:system|inst|sys)(?: message| prompt| notice)?\]+|<<\/?sys>>|###\s*(?:system|instruction|new instructions)/ },
  { name: 'impersonation', pattern: /<\/?(?:system|tool|developer|instructions?|assistant|function)(?:[_-]\w+)?\b[^>]{0,40}>/ },
  { name: 'impersonation', pattern: /\b(?:system prompt|system message|tool (?:output|result|response)|function (?:output|result))\s*:/ },
  { name: 'impersonation', pattern: /"role"\s*:\s*"(?:system|tool|developer|function)"/ },
  // Other languages: the same overrides, personas and steering.
  { name: 'override', pattern: /\b(?:ignorier|vergiss|vergesse|missachte)\w*\b[^.!?]{0,30}\b(?:anweisungen|regeln|instruktionen|vorgaben)\b/ },
  { name: 'persona', pattern: /\bdu bist (?:jetzt|ab sofort|nun|von nun an)\b|\bab sofort (?:bist du|musst du|sollst du)\b|\b(?:du sollst|du musst|sollst du|musst du|du darfst)\b/ },
  { name: 'steering', pattern: /\b(?:empfiehl|empfehle|nenne|erwähne)\w* (?:immer|stets|ausschließlich)\b/ },
  { name: 'override', pattern: /\b(?:ignore[rsz]?|oublie[rsz]?)\b[^.!?]{0,30}\b(?:instructions|consignes|règles|directives)\b|\boublie[rsz]? tout ce qu/ },
  { name: 'persona', pattern: /\b(?:tu es|vous êtes) (?:maintenant|désormais|dorénavant)\b|\bà partir de maintenant,? (?:tu|vous)\b|\b(?:dorénavant|désormais),? (?:tu|vous)\b|\b(?:tu dois|vous devez)\b/ },
  { name: 'steering', pattern: /\brecommande[rsz]? (?:toujours|systématiquement)\b/ },
  { name: 'override', pattern: /\b(?:ignora(?:r|d|te)?|olvida[rd]?|dimentica(?:te)?)\b[^.!?]{0,30}\b(?:instrucciones|reglas|indicaciones|istruzioni|regole)\b/ },
  { name: 'persona', pattern: /\bahora eres\b|\bdesde ahora,? (?:eres|debes)\b|\bora sei\b|\bda ora in poi,? (?:sei|devi)\b/ },
  { name: 'steering', pattern: /\brecomienda siempre\b|\braccomanda sempre\b|\brecomende sempre\b/ },
  { name: 'override', pattern: /\b(?:ignore|esqueça)\b[^.!?]{0,30}\b(?:instruções|regras)\b/ },
  { name: 'persona', pattern: /\bagora você é\b|\ba partir de agora,? você\b/ },
];

/** Markup unwrapped to its text, zero-width and fancy characters folded, spacing collapsed. */
export function normaliseForGuard(text: string): string {
  return text
    .normalize('NFKC')
    .replace(/[\u200b-\u200f\u2060\ufeff]/g, '')
    .replace(/[\u2018\u2019]/g, "'")
    .replace(/[\u201c\u201d]/g, '"')
    .replace(/[*`~]+/g, '')
    .replace(/\s+/g, ' ')
    .trim()
    .toLowerCase();
}

/** The name of the first rule a text breaks, or undefined when it reads as a plain fact. */
export function suspiciousRule(text: string): string | undefined {
  const normalised = normaliseForGuard(text);
  // HTML comments and tags hide an instruction from a reader, not from the model: read their insides too.
  const unwrapped = normalised.replace(/<!--|-->/g, ' ').replace(/<(?!\/?(?:system|tool|developer|instructions?|assistant)\b)[^>]{0,200}>/g, ' ');
  for (const rule of RULES) {
    if (rule.pattern.test(normalised) || rule.pattern.test(unwrapped)) return rule.name;
  }
  return undefined;
}

export function isSuspicious(text: string): boolean {
  return suspiciousRule(text) !== undefined;
}
