//! What each category means, in sentences: a description and a few short
//! examples per category, in English and Chinese, for placing a note by
//! meaning when nothing it says about itself places it.
//!
//! They are written from the categories' definitions (see [`Category`]),
//! not from any labeled note: the labeled set measures them, and a
//! sentence copied from it would measure nothing. Keep each one short and
//! typical of how an agent or a person writes such a memory; an example
//! that could belong to two categories blurs both.
//!
//! This is data only; the embedding of these sentences, and the
//! comparison with a note's, live with the model (`tasks::meaning`).

use super::Category;

/// A category's description and example memories.
#[derive(Debug, Clone, Copy)]
pub struct Prototype {
    /// The category these sentences stand for.
    pub category: Category,
    /// What the category holds, in one sentence.
    pub description: &'static str,
    /// Short memories of that kind, English and Chinese.
    pub examples: &'static [&'static str],
}

/// Every category's prototype, `inbox` included: a note nearest to the
/// inbox's fragments is one meaning cannot place either.
pub const PROTOTYPES: &[Prototype] = &[
    Prototype {
        category: Category::Soul,
        description: "Core identity, values and mission: who I am and what I stand for.",
        examples: &[
            "My purpose is to help people think more clearly, not to think for them.",
            "I value honesty over comfort, even when the truth is unwelcome.",
            "At heart I am a careful builder who cares about doing things right.",
            "What matters most to me is being trustworthy.",
            "我的使命是帮助别人把事情想清楚。",
            "我最看重的价值是诚实和正直。",
            "我相信知识应该自由分享，这是我做事的根本原则。",
            "我是谁：一个愿意长期陪伴用户成长的助手。",
        ],
    },
    Prototype {
        category: Category::Character,
        description: "Personality traits and communication style: how I come across and how I talk.",
        examples: &[
            "I tend to be calm and patient, and a bit dry in my humour.",
            "My tone is warm but direct; I skip small talk and get to the point.",
            "I am curious by nature and ask a lot of follow-up questions.",
            "When I explain something I like to use analogies and keep it playful.",
            "我的性格比较内向，说话慢条斯理。",
            "说话风格：简洁直接，偶尔带点幽默。",
            "我是一个乐观、有耐心的人，很少发脾气。",
            "语气要友好亲切，像朋友一样聊天。",
        ],
    },
    Prototype {
        category: Category::People,
        description: "People and relationships: who someone is, their role, and how we know each other.",
        examples: &[
            "Maria is the team lead on the payments team; she joined last spring.",
            "My sister lives in Lisbon and works as a nurse.",
            "Tom from accounting is the person to ask about expense reports.",
            "Priya is my mentor; we meet once a month and she prefers email.",
            "张伟是我的大学同学，现在在深圳做产品经理。",
            "李老师是我的导师，研究方向是自然语言处理。",
            "王芳是隔壁组的设计师，性格开朗，喜欢喝咖啡。",
            "我妈妈的生日快到了，她喜欢养花。",
        ],
    },
    Prototype {
        category: Category::Project,
        description: "Project context: what a project is, its repository, stack, team, status and deployment.",
        examples: &[
            "The billing service lives in the repo acme/billing and deploys to staging on every merge.",
            "Project Falcon: a mobile app for field technicians, React Native front end, Go back end.",
            "The website rewrite is in phase two; the goal is to launch before the end of the quarter.",
            "The data pipeline runs on Airflow and writes to the analytics warehouse nightly.",
            "这个项目的代码仓库在 GitLab 上，生产环境部署在阿里云。",
            "项目背景：为客服团队做一个内部工单系统，目前处于测试阶段。",
            "新版官网项目由三个人负责，计划下个月上线。",
            "项目技术栈：前端 Vue，后端 Java Spring Boot，数据库 MySQL。",
        ],
    },
    Prototype {
        category: Category::Date,
        description: "Dates and schedules: events, deadlines and appointments on a calendar, and what happened on a day.",
        examples: &[
            "The conference runs from March 3 to March 5 in Berlin.",
            "Quarterly report is due on the 30th of June.",
            "Team offsite scheduled for the second week of October.",
            "Today we had the kickoff meeting and agreed on the timeline.",
            "截止日期是五月二十日，之前必须提交材料。",
            "下周三下午两点在三楼会议室开评审会。",
            "国庆假期从十月一日到十月七日。",
            "今天的日程：上午培训，下午和客户开会。",
        ],
    },
    Prototype {
        category: Category::Knowledge,
        description: "Technical knowledge, facts and patterns: how something works, an explanation worth keeping.",
        examples: &[
            "HTTP/2 multiplexes many requests over a single TCP connection.",
            "A B-tree keeps its keys sorted and balanced, so lookups take logarithmic time.",
            "Photosynthesis turns light, water and carbon dioxide into sugar and oxygen.",
            "In Rust, a value can have either one mutable reference or many shared ones.",
            "Redis 的数据全部存放在内存中，可以通过持久化写入磁盘。",
            "光速约为每秒三十万公里。",
            "哈希表通过哈希函数把键映射到数组下标，平均查找时间是常数。",
            "知识点：TCP 三次握手用来建立可靠连接。",
        ],
    },
    Prototype {
        category: Category::Feedback,
        description: "Feedback, suggestions and improvements: what someone said was good or should change about my work.",
        examples: &[
            "The user said my answers are too long and asked me to be more concise.",
            "Reviewer comment: the error messages need more context.",
            "They liked the new layout but found the colours hard to read.",
            "Suggestion from the team: add examples to the documentation.",
            "用户反馈说回复太啰嗦了，希望简短一点。",
            "评审意见：这个接口的命名不够清楚，建议修改。",
            "老板夸这次的报告写得很好，但图表需要改进。",
            "用户建议下次先给结论再解释原因。",
        ],
    },
    Prototype {
        category: Category::Preferences,
        description: "Preferences: what the user or agent likes, dislikes, and wants done a certain way.",
        examples: &[
            "The user prefers tabs over spaces and dark mode in every editor.",
            "I like my coffee black and my meetings short.",
            "Always answer in British English, and avoid emojis.",
            "She would rather get one summary email than many notifications.",
            "用户喜欢用中文交流，不喜欢太正式的语气。",
            "我偏好使用 Vim 编辑器，快捷键用默认设置。",
            "他不吃辣，喜欢清淡的饭菜。",
            "代码注释请用英文写，变量名用驼峰命名。",
        ],
    },
    Prototype {
        category: Category::Decisions,
        description: "Design decisions and choices made: what we chose, over what alternatives, and why.",
        examples: &[
            "We decided to use PostgreSQL instead of MongoDB because we need transactions.",
            "Decision: the API will be versioned in the URL path, not in headers.",
            "After comparing the options we chose to self-host rather than pay for the SaaS plan.",
            "We will not support Internet Explorer; the cost outweighs the few users.",
            "经过讨论，我们决定采用微服务架构。",
            "最终选择了方案二，因为成本更低、维护更简单。",
            "决定暂不支持离线模式，等下个版本再说。",
            "团队一致同意把发布周期改为两周一次。",
        ],
    },
    Prototype {
        category: Category::Lessons,
        description: "Lessons learned and gotchas: a mistake, what went wrong, and what to do differently next time.",
        examples: &[
            "Lesson learned: always back up the database before running a migration.",
            "Gotcha: the cron job runs in UTC, not local time, which is why it fired an hour early.",
            "We lost a day because nobody checked the disk was full; monitor it next time.",
            "Never deploy on a Friday afternoon; the outage last month proved it.",
            "教训：上线前一定要在测试环境完整跑一遍。",
            "踩过的坑：这个库的默认超时只有一秒，需要手动调大。",
            "这次失败的原因是需求没确认清楚，以后要先写下来让对方确认。",
            "经验总结：遇到问题先看日志，不要凭感觉猜。",
        ],
    },
    Prototype {
        category: Category::Habits,
        description: "Habits, routines and behavioural patterns: what someone does regularly, every day or every week.",
        examples: &[
            "I go for a run every morning before work.",
            "The user usually checks email first thing and then plans the day.",
            "Every Friday I review the week's notes and tidy the task list.",
            "He tends to work late at night and sleep in on weekends.",
            "我每天晚上睡前读半小时书。",
            "习惯：每周一早上整理本周计划。",
            "她通常午饭后散步十五分钟。",
            "他每天早上先喝一杯温水再吃早饭。",
        ],
    },
    Prototype {
        category: Category::Skills,
        description: "Skills and capabilities: what someone can do, and how to do a task step by step.",
        examples: &[
            "I can write and debug SQL queries, including window functions.",
            "How to rebase a branch: fetch, run git rebase origin/main, fix conflicts, then continue.",
            "The user is fluent in Spanish and can read basic Japanese.",
            "Steps to renew the certificate: run the script, then reload nginx.",
            "我会用 Python 做数据分析，熟悉 pandas 和 numpy。",
            "技能：会弹吉他，能看五线谱。",
            "操作步骤：先打开设置，再选择账户，最后点击导出。",
            "他擅长写技术文档和做演讲。",
        ],
    },
    Prototype {
        category: Category::Inbox,
        description: "A fragment with nothing to place it: a stray word, a bare link, a half sentence.",
        examples: &[
            "https://example.com/some/page",
            "misc",
            "see above",
            "todo check this later?",
            "随便记一下",
            "链接：https://example.cn/a/b",
            "待整理",
            "嗯",
        ],
    },
    Prototype {
        category: Category::Reminders,
        description: "Reminders: something to be told about at a given time, remind me to do it then.",
        examples: &[
            "Remind me to call the dentist tomorrow at 9am.",
            "Don't forget to renew the passport next month.",
            "Reminder: pay the electricity bill on Friday.",
            "Ping me in two hours to check the build.",
            "提醒我明天下午三点给客户打电话。",
            "别忘了周五之前交房租。",
            "记得下周一带身份证去银行。",
            "到时间提醒我吃药。",
        ],
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_category_has_its_prototype_once() {
        for category in Category::ALL {
            let found = PROTOTYPES.iter().filter(|p| p.category == category).count();
            assert_eq!(found, 1, "{category}");
        }
        assert!(PROTOTYPES.iter().all(|p| p.examples.len() >= 4));
    }
}
