// The emoji picker: a small built-in set (about 200 common emoji in categories), searchable by their English
// names (emoji names are not translated; the category names are), inserted at the caret of the text field.
import { h, t } from './util.js';

// category -> "emoji name|emoji name|..."
const SETS = [
  ['Smileys', '😀 grinning|😃 smiley|😄 smile|😁 grin|😆 laughing|😅 sweat smile|🤣 rolling on the floor|😂 joy tears|🙂 slightly smiling|🙃 upside down|😉 wink|😊 blush|😇 halo angel|🥰 hearts love|😍 heart eyes|🤩 star struck|😘 kiss|😋 yum|😛 tongue|😜 wink tongue|🤪 zany|🤑 money|🤗 hug|🤭 hand over mouth|🤫 shush|🤔 thinking|🤐 zipper|🤨 raised eyebrow|😐 neutral|😑 expressionless|😶 no mouth|😏 smirk|😒 unamused|🙄 eye roll|😬 grimace|😌 relieved|😔 pensive|😪 sleepy|😴 sleeping|😷 mask|🤒 thermometer sick|🤯 mind blown|🥳 party|😎 sunglasses cool|🤓 nerd|🧐 monocle|😕 confused|😟 worried|😮 open mouth|😲 astonished|😳 flushed|🥺 pleading|😢 cry|😭 sob|😱 scream|😤 triumph|😡 angry|🤬 cursing|💀 skull|🤡 clown|👻 ghost|👽 alien|🤖 robot|💩 poo'],
  ['People', '👋 wave|🤚 raised back of hand|✋ raised hand|🖖 vulcan|👌 ok hand|🤌 pinched fingers|✌️ victory peace|🤞 crossed fingers|🤟 love you|🤘 rock on|🤙 call me|👈 point left|👉 point right|👆 point up|👇 point down|☝️ index up|👍 thumbs up|👎 thumbs down|✊ fist|👊 punch|👏 clap|🙌 raised hands|👐 open hands|🤲 palms up|🤝 handshake|🙏 pray thanks|✍️ writing|💪 muscle strong|🧠 brain|👀 eyes|👁️ eye|👶 baby|🧒 child|👩 woman|👨 man|🧑 person|👵 old woman|👴 old man|🙋 raising hand|🤷 shrug|🤦 facepalm|💁 tipping hand|🙅 no gesture|🙆 ok gesture|🧑‍💻 technologist|👩‍🏫 teacher|👨‍🍳 cook|🧑‍🎨 artist'],
  ['Nature', '🐶 dog|🐱 cat|🐭 mouse|🐰 rabbit|🦊 fox|🐻 bear|🐼 panda|🐨 koala|🐯 tiger|🦁 lion|🐮 cow|🐷 pig|🐸 frog|🐵 monkey|🐔 chicken|🐧 penguin|🐦 bird|🦋 butterfly|🐝 bee|🐢 turtle|🐍 snake|🐙 octopus|🐬 dolphin|🐳 whale|🌵 cactus|🌲 evergreen tree|🌳 tree|🌴 palm|🌱 seedling|🍀 four leaf clover|🍁 maple leaf|🌸 cherry blossom|🌹 rose|🌻 sunflower|🌞 sun face|🌙 moon|⭐ star|🌟 glowing star|✨ sparkles|⚡ lightning|🔥 fire|🌈 rainbow|☀️ sun|⛅ cloud sun|🌧️ rain|❄️ snowflake|🌊 wave ocean|🌍 earth globe'],
  ['Food', '🍎 apple|🍊 orange|🍋 lemon|🍌 banana|🍉 watermelon|🍇 grapes|🍓 strawberry|🍒 cherries|🍑 peach|🥑 avocado|🍅 tomato|🥕 carrot|🌽 corn|🥐 croissant|🍞 bread|🧀 cheese|🥚 egg|🥓 bacon|🍔 burger|🍟 fries|🍕 pizza|🌮 taco|🌯 burrito|🍣 sushi|🍜 ramen noodles|🍝 pasta|🍰 cake|🎂 birthday cake|🍩 doughnut|🍪 cookie|🍫 chocolate|🍿 popcorn|☕ coffee|🍵 tea|🍺 beer|🍷 wine|🥂 cheers|🍾 champagne'],
  ['Activities', '⚽ soccer football|🏀 basketball|🏈 american football|⚾ baseball|🎾 tennis|🏐 volleyball|🏓 ping pong|🏸 badminton|🥊 boxing|🏆 trophy|🥇 gold medal|🥈 silver medal|🥉 bronze medal|🎯 target bullseye|🎮 video game|🎲 dice|🧩 puzzle|🎨 art palette|🎬 film clapper|🎤 microphone|🎧 headphones|🎵 music note|🎸 guitar|🎹 piano|🎉 party popper|🎊 confetti|🎈 balloon|🎁 gift|🎄 christmas tree|🎃 jack o lantern|🏃 running|🚴 cycling|🧘 yoga'],
  ['Travel', '🚗 car|🚕 taxi|🚌 bus|🚲 bicycle|🛵 scooter|🚆 train|✈️ airplane|🚀 rocket|🛸 ufo|🚢 ship|⛵ sailboat|🏠 house|🏢 office|🏫 school|🏥 hospital|🏝️ island|🏖️ beach|⛰️ mountain|🗽 statue of liberty|🗼 tower|🌉 bridge night|🌆 city|🗺️ map|🧭 compass|⏰ alarm clock|⌛ hourglass|📍 pin location'],
  ['Objects', '💡 idea bulb|📱 phone|💻 laptop|🖥️ desktop|⌨️ keyboard|🖱️ mouse computer|📷 camera|🎥 movie camera|📺 tv|📻 radio|🔋 battery|🔌 plug|💰 money bag|💳 credit card|💎 gem|🔧 wrench|🔨 hammer|⚙️ gear|🔒 lock|🔑 key|📦 package box|✉️ envelope|📧 email|📝 memo|📅 calendar|📌 pushpin|📎 paperclip|✂️ scissors|📚 books|📖 book|🔍 search magnifier|📈 chart up|📉 chart down|📊 bar chart|📣 megaphone|📢 loudspeaker|🔔 bell|🏷️ label tag|🛒 cart'],
  ['Symbols', '❤️ red heart|🧡 orange heart|💛 yellow heart|💚 green heart|💙 blue heart|💜 purple heart|🖤 black heart|🤍 white heart|💔 broken heart|💯 hundred|✅ check mark|☑️ check box|✔️ check|❌ cross|❗ exclamation|❓ question|⚠️ warning|🚫 prohibited|♻️ recycle|🔴 red circle|🟢 green circle|🔵 blue circle|⬆️ up arrow|⬇️ down arrow|➡️ right arrow|⬅️ left arrow|🔗 link|🆕 new|🆓 free|🔝 top|💬 speech bubble|💭 thought|🗨️ speech|➕ plus|➖ minus|#️⃣ hash|🏁 chequered flag|🚩 red flag'],
];
const CATEGORIES = SETS.map(([name, list]) => [name, list.split('|').map((item) => {
  const space = item.indexOf(' ');
  return [item.slice(0, space), item.slice(space + 1)];
})]);
const CATEGORY_WORDS = { Smileys: () => t('Smileys'), People: () => t('People'), Nature: () => t('Nature'), Food: () => t('Food'),
  Activities: () => t('Activities'), Travel: () => t('Travel'), Objects: () => t('Objects'), Symbols: () => t('Symbols') };

/** Every emoji of the set whose name holds `search` (all of them for an empty search), by category. */
export function findEmoji(search = '') {
  const wanted = search.trim().toLowerCase();
  return CATEGORIES.map(([name, list]) => [name, list.filter(([, words]) => !wanted || words.includes(wanted))])
    .filter(([, list]) => list.length);
}

/** Inserts `text` at the caret of a textarea (replacing its selection) and says so with an input event. */
export function insertAtCaret(textarea, text) {
  const start = textarea.selectionStart ?? textarea.value.length;
  const end = textarea.selectionEnd ?? start;
  textarea.setRangeText(text, start, end, 'end');
  textarea.dispatchEvent(new Event('input', { bubbles: true }));
  textarea.focus();
}

/** An "Emoji" button opening a searchable grid; a chosen emoji goes to the caret of `target()`'s textarea. */
export function emojiButton(target) {
  const search = h('input', { type: 'search', 'aria-label': t('Search emoji'), placeholder: t('Search emoji'), oninput: () => draw() });
  const grid = h('div.emoji-grid', { tabindex: '0', role: 'group', 'aria-label': t('Emoji') });
  const panel = h('div.emoji-panel', { hidden: true }, search, grid);
  const toggle = h('button.tool', { type: 'button', 'aria-expanded': 'false', onclick: () => open(panel.hidden) }, '😀 ', t('Emoji'));
  const open = (yes) => {
    panel.hidden = !yes;
    toggle.setAttribute('aria-expanded', String(yes));
    if (yes) { draw(); search.focus(); }
  };
  function draw() {
    const found = findEmoji(search.value);
    grid.replaceChildren(...(found.length ? found.map(([name, list]) => h('div.emoji-cat', h('p.emoji-cat-name', CATEGORY_WORDS[name]()),
      list.map(([emoji, words]) => h('button.emoji', { type: 'button', title: words, 'aria-label': words, onclick: () => insertAtCaret(target(), emoji) }, emoji))))
      : [h('p.muted', t('No emoji by that name'))]));
  }
  panel.addEventListener('keydown', (event) => { if (event.key === 'Escape') { open(false); toggle.focus(); } });
  return h('span.emoji-picker', toggle, panel);
}
